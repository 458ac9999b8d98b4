"""Saving and loading a trained model: its configuration and weights in one
``.npz`` file, written to a temporary file and renamed, so an interrupted
run never leaves half a checkpoint.

Loading checks the file against its own configuration: every parameter the
configuration implies, with its shape, and nothing else. A mismatch is a
ValueError naming the parameter.
"""

# --8<-- [start:checkpoint]
import json
import os
from dataclasses import asdict
from pathlib import Path

import numpy as np

from attention.model import ModelConfig, parameter_shapes

DTYPES = ("float16", "float32")


def save_checkpoint(path, params, config, *, dtype="float16"):
    """Write config and params (cast to dtype) to path, atomically."""
    if dtype not in DTYPES:
        raise ValueError(f"save_checkpoint: dtype must be one of {DTYPES}, "
                         f"got {dtype!r}")
    check_params(params, config)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, config=np.array(json.dumps(asdict(config))),
                 **{name: p.astype(dtype) for name, p in params.items()})
    os.replace(tmp, path)


def check_params(params, config):
    """A ValueError naming the first parameter that config does not have,
    lacks, or has with another shape."""
    expected = parameter_shapes(config)
    for name in params:
        if name not in expected:
            raise ValueError(f"checkpoint: parameter {name!r} is not in "
                             f"the model of this config")
    for name, shape in expected.items():
        if name not in params:
            raise ValueError(f"checkpoint: parameter {name!r} is missing")
        if params[name].shape != shape:
            raise ValueError(f"checkpoint: parameter {name!r} has shape "
                             f"{params[name].shape}, the config needs "
                             f"{shape}")


def load_checkpoint(path, *, dtype=np.float32):
    """(params, config) from a checkpoint; weights cast to dtype."""
    with np.load(path) as data:
        if "config" not in data:
            raise ValueError(f"checkpoint: {path} has no config")
        try:
            config = ModelConfig(**json.loads(str(data["config"][()])))
        except TypeError as error:
            raise ValueError(f"checkpoint: config of {path}: {error}") from None
        params = {name: data[name] for name in data.files if name != "config"}
    for name, p in params.items():
        if p.dtype.name not in DTYPES:
            raise ValueError(f"checkpoint: parameter {name!r} is "
                             f"{p.dtype}, not one of {DTYPES}")
    check_params(params, config)
    order = parameter_shapes(config)
    return {name: params[name].astype(dtype) for name in order}, config
# --8<-- [end:checkpoint]
