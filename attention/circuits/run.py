"""``make induction``: the attention-only model trained on three seeds, shipped; then the
same with an MLP in each layer.

Deterministic for a seed on one machine (one BLAS thread: the Makefile sets it): the
weights and the batches are drawn from the seed. It writes ``attention/circuits/shipped/``:
``models.npz`` (each seed's trained weights, float32, named ``seed{s}/{name}``, and the
configuration as JSON) and ``log.json`` (each seed's losses on the fixed batch, its drop
step, the seconds it took and the machine's load average meanwhile; the settings), into a
staging folder first and then renamed into place, ``log.json`` last, as chapter 7's
``make train`` does. The model with MLPs goes beside them as ``mlp-models.npz`` and
``mlp-log.json``, its weights rounded to float16 to keep all the shipped files under a
megabyte (``shipped`` reads them back as float32).
"""

import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from attention.circuits.model import CircuitConfig
from attention.circuits.train import InductionTrain, drop_step, train

SHIPPED = Path(__file__).resolve().parent / "shipped"
SEEDS = (0, 1, 2)
MODEL = CircuitConfig()
TRAIN = InductionTrain()
MLP_MODEL = CircuitConfig(d_mlp=64)  # the same, with a small MLP per layer
MLP_TRAIN = InductionTrain()  # the same data, optimiser and steps


def shipped(folder=SHIPPED, prefix=""):
    """(config, {seed: params}, log) of the shipped run; prefix "mlp-" for
    the model with MLPs. Weights as float32, the log's config with today's
    defaults (d_mlp=0 for a run logged before the MLP existed)."""
    with np.load(Path(folder) / f"{prefix}models.npz") as data:
        config = CircuitConfig(**json.loads(str(data["config"])))
        params = {}
        for key in data.files:
            if key != "config":
                seed, name = key.split("/", 1)
                params.setdefault(int(seed[4:]), {})[name] = (
                    data[key].astype(np.float32))
    log = json.loads((Path(folder) / f"{prefix}log.json").read_text("utf8"))
    log["model"] = asdict(CircuitConfig(**log["model"]))
    return config, params, log


def main(model=MODEL, tc=TRAIN, seeds=SEEDS, out=SHIPPED, quiet=False,
         prefix="", store=np.float32):
    """Train one model per seed, then replace the set in out: its files
    named prefix + "models.npz" and prefix + "log.json", weights as store."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        arrays, log = {"config": np.array(json.dumps(asdict(model)))}, {
            "model": asdict(model), "train": asdict(tc), "seeds": {}}
        for seed in seeds:
            start = time.perf_counter()

            def report(step, first, repeat):
                if not quiet and step % 250 == 0:
                    print(f"seed {seed}  step {step:4d}  first half {first:.3f}"
                          f"  repeat {repeat:.3f}", flush=True)
            params, run = train(model, InductionTrain(
                **(asdict(tc) | {"seed": seed})), report=report)
            run["drop_step"] = drop_step(run, model.vocab_size)
            run["seconds"] = time.perf_counter() - start
            run["load"] = os.getloadavg()[1]  # the machine's, last 5 minutes
            log["seeds"][str(seed)] = run
            arrays |= {f"seed{seed}/{k}": v.astype(store)
                       for k, v in params.items()}
            if not quiet:
                print(f"{prefix}seed {seed}: the loss on the repeat drops at "
                      f"step {run['drop_step']} ({run['seconds']:.0f} s)",
                      flush=True)
        with open(staging / "models.npz", "wb") as f:
            np.savez_compressed(f, **arrays)
        (staging / "log.json").write_text(json.dumps(log), "utf8")
        for name in ("models.npz", "log.json"):  # log.json last
            os.replace(staging / name, out / f"{prefix}{name}")
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def cli(argv):
    """``make induction``: both models, or the one named ("attention-only",
    "mlp")."""
    runs = {"attention-only": {}, "mlp": {
        "model": MLP_MODEL, "tc": MLP_TRAIN, "prefix": "mlp-",
        "store": np.float16}}
    unknown = [name for name in argv if name not in runs]
    if unknown:
        raise SystemExit(f"run: unknown model {unknown[0]!r}, expected "
                         f"{' or '.join(runs)}")
    for name in argv or runs:
        main(**runs[name])


if __name__ == "__main__":
    sys.exit(cli(sys.argv[1:]))
