"""Saving and loading a trained model: its configuration and weights in one
``.npz`` file, written to a temporary file and renamed, so an interrupted
run never leaves half a checkpoint.

The configuration is stored as JSON, its nested settings (chapter 8's
``rope_scaling``, chapter 9's ``moe``) as objects that loading turns back
into their classes, so every ModelConfig round-trips. Loading checks the
file against its own configuration: every parameter the configuration
implies, with its shape, and nothing else. A damaged or foreign file, or a
mismatch, is one ValueError naming the file and what is wrong.
"""

# --8<-- [start:checkpoint]
import json
import os
import zipfile
from dataclasses import asdict
from pathlib import Path

import numpy as np

from attention.families.moe import MoE
from attention.long_context.rope_scaling import RopeScaling
from attention.model import ModelConfig, parameter_shapes

DTYPES = ("float16", "float32")
NESTED = {"rope_scaling": RopeScaling, "moe": MoE}  # fields that are classes


def save_checkpoint(path, params, config, *, dtype="float16"):
    """Write config and params (cast to dtype) to path, atomically."""
    if dtype not in DTYPES:
        raise ValueError(f"save_checkpoint: dtype must be one of {DTYPES}, "
                         f"got {dtype!r}")
    check_params(params, config, "save_checkpoint")
    text = config_to_json(config)
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        np.savez(f, config=np.array(text),
                 **{name: p.astype(dtype) for name, p in params.items()})
    os.replace(tmp, path)


def config_to_json(config):
    """The config as JSON text (NumPy numbers in it as Python numbers)."""
    def plain(value):
        if isinstance(value, np.generic):
            return value.item()
        raise TypeError(f"config_to_json: a config field holds {value!r}, "
                        f"which JSON cannot store")
    return json.dumps(asdict(config), default=plain)


def config_from_json(text):
    """The ModelConfig that ``config_to_json`` wrote; a ValueError or
    TypeError from JSON or the config's own checks otherwise."""
    fields = json.loads(text)
    if not isinstance(fields, dict):
        raise ValueError(f"config_from_json: a JSON object is needed, got "
                         f"{text[:40]!r}")
    for name, cls in NESTED.items():
        if isinstance(fields.get(name), dict):
            fields[name] = cls(**fields[name])
    return ModelConfig(**fields)


def check_params(params, config, where):
    """A ValueError, its message starting with where, naming the first
    parameter that config does not have, lacks, or has with another shape."""
    expected = parameter_shapes(config)
    for name in params:
        if name not in expected:
            raise ValueError(f"{where}: parameter {name!r} is not in "
                             f"the model of this config")
    for name, shape in expected.items():
        if name not in params:
            raise ValueError(f"{where}: parameter {name!r} is missing")
        if params[name].shape != shape:
            raise ValueError(f"{where}: parameter {name!r} has shape "
                             f"{params[name].shape}, the config needs "
                             f"{shape}")


def load_checkpoint(path, *, dtype=np.float32):
    """(params, config) from a checkpoint; weights cast to dtype, a
    floating-point type (an integer one would truncate every weight)."""
    try:
        kind = np.dtype(dtype).kind
    except (TypeError, ValueError):
        kind = None
    if kind != "f":
        raise ValueError(f"load_checkpoint: dtype must be a floating-point "
                         f"type such as np.float32, got {dtype!r}")
    where = f"load_checkpoint: {path}"
    text, params = _read(path, where)
    try:
        config = config_from_json(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: its config is not valid JSON: "
                         f"{error}") from None
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: its config is not a valid ModelConfig: "
                         f"{error}") from None
    for name, p in params.items():
        if p.dtype.name not in DTYPES:
            raise ValueError(f"{where}: parameter {name!r} is {p.dtype}, "
                             f"not one of {DTYPES}")
    check_params(params, config, where)
    order = parameter_shapes(config)
    return {name: params[name].astype(dtype) for name in order}, config


def _read(path, where):
    """(config text, {name: array}) of the .npz file at path, or a
    ValueError saying what is wrong with the file."""
    try:
        data = np.load(path)  # allow_pickle=False: no code runs on load
    except (EOFError, ValueError, zipfile.BadZipFile):  # OSError: as it is
        what = ("the file is empty" if os.path.getsize(path) == 0 else
                "it is not a whole .npz (zip) file: truncated, or a file "
                "of another kind")
        raise ValueError(f"{where}: not a checkpoint: {what}") from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise ValueError(f"{where}: not a checkpoint: it holds one array "
                         f"(an .npy file), not a config and named weights")
    with data:
        if "config" not in data.files:
            raise ValueError(f"{where}: not a checkpoint: it has no config")
        arrays = {name: _member(data, name, where) for name in data.files}
    text = arrays.pop("config")
    if text.shape != () or text.dtype.kind != "U":
        raise ValueError(f"{where}: its config is not text but an array of "
                         f"{text.dtype}, shape {text.shape}")
    return str(text[()]), arrays


def _member(data, name, where):
    """One stored array of an open .npz, or a ValueError naming it."""
    try:
        return data[name]
    except ValueError:  # numpy refuses pickled (object) arrays
        raise ValueError(f"{where}: {name!r} is an object array, which a "
                         f"checkpoint never holds") from None
    except (OSError, EOFError, zipfile.BadZipFile) as error:
        raise ValueError(f"{where}: damaged: {name!r} cannot be read "
                         f"({error})") from None
# --8<-- [end:checkpoint]
