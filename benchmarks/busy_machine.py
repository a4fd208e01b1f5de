"""Training throughput on an idle machine and beside another training, as nasmlcn
trains (a bounded OpenMP spin, fewer threads where other processes hold cores) and as
torch does by default.

Each figure is ``benchmarks/train_throughput.py`` (CapsNet and one MLCN, images/s of
whole training steps at batch 100) run in a fresh process, so that OpenMP reads its
wait policy at start:

- ``default``: nothing set (GNU OpenMP spins 300,000 times before it sleeps);
- ``active``: ``OMP_WAIT_POLICY=ACTIVE``, torch's threads spin while they wait;
- ``passive``: ``OMP_WAIT_POLICY=PASSIVE``, they sleep at once;
- ``spin10k``: ``GOMP_SPINCOUNT=10000``, what nasmlcn sets, all threads kept;
- ``nasmlcn``: nothing set, ``nasmlcn`` imported first (it sets the spin count),
  then ``nasmlcn.training.share_cores`` (one look at the machine: fewer threads
  where other processes hold cores), as ``nasmlcn train`` and a search's trials do.

The neighbour is another training (the same MLCN, torch's default threads, in a
session of its own), started before and stopped after the busy rounds. The variants
alternate within each round; the figure is the median over ``--rounds``, and the
ratio is against ``default`` on the idle machine, measured in the same run.

    python benchmarks/busy_machine.py [--rounds 3] [--seconds 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODEL = "2*mlcn2:4x1"
VARIANTS = ("default", "active", "passive", "spin10k", "nasmlcn")
_SET = {
    "active": {"OMP_WAIT_POLICY": "ACTIVE"},
    "passive": {"OMP_WAIT_POLICY": "PASSIVE"},
    "spin10k": {"GOMP_SPINCOUNT": "10000"},
}
_CHOSEN = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_NUM_THREADS", "NASMLCN_IGNORE_LOAD")

_CHILD = """
import sys
sys.path.insert(0, {here!r})
if {nasmlcn}:
    import nasmlcn  # sets OMP_WAIT_POLICY=PASSIVE before torch starts
    from nasmlcn.training import share_cores
    share_cores("training")
import train_throughput
sys.exit(train_throughput.main({argv!r}))
"""

_NEIGHBOUR = """
import sys
sys.path.insert(0, {here!r})
import torch
from train_throughput import Stepper
from nasmlcn.specs import MLCNSpec
s = Stepper(MLCNSpec.from_lanes({model!r}), 100, torch.device("cpu"))
while True:
    s.step()
"""


def _env(variant: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CHOSEN}
    return {**env, **_SET.get(variant, {})}


def measure(variant: str, seconds: float, batch: int) -> dict[str, Any]:
    """One run of train_throughput.py in a fresh process: its JSON result."""
    argv = ["--models", MODEL, "--rounds", "1", "--seconds", str(seconds), "--json"]
    argv += ["--batch-size", str(batch)]
    code = _CHILD.format(here=str(HERE), nasmlcn=variant == "nasmlcn", argv=argv)
    done = subprocess.run(
        [sys.executable, "-c", code], env=_env(variant), capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _rounds(rounds: int, seconds: float, batch: int) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {v: [] for v in VARIANTS}
    for r in range(rounds):
        order = VARIANTS if r % 2 == 0 else tuple(reversed(VARIANTS))  # alternating
        for variant in order:
            runs[variant].append(measure(variant, seconds, batch))
    return runs


def _neighbour() -> subprocess.Popen[bytes]:
    code = _NEIGHBOUR.format(here=str(HERE), model=MODEL)
    env = {k: v for k, v in os.environ.items() if k not in _CHOSEN}
    return subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)


def _summary(runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    out = {}
    for variant, results in runs.items():
        mlcn = [r["models"][0]["images_per_second"] for r in results]
        capsnet = [r["capsnet_images_per_second"] for r in results]
        out[variant] = {
            "mlcn_images_per_second": statistics.median(mlcn),
            "mlcn_range": [min(mlcn), max(mlcn)],
            "capsnet_images_per_second": statistics.median(capsnet),
            "threads": sorted({r["threads"] for r in results}),
            "runs": len(results),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds per model and run")
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    from nasmlcn.hardware import look_at_load

    os.environ.pop("NASMLCN_IGNORE_LOAD", None)
    before = look_at_load()
    idle = _summary(_rounds(args.rounds, args.seconds, args.batch_size))
    neighbour = _neighbour()
    try:
        time.sleep(3.0)  # it imports torch and starts training
        time.sleep(0.3)
        held = look_at_load()
        busy = _summary(_rounds(args.rounds, args.seconds, args.batch_size))
    finally:
        neighbour.kill()
        neighbour.wait()
    base = idle["default"]["mlcn_images_per_second"]
    result = {
        "model": MODEL,
        "batch_size": args.batch_size,
        "rounds": args.rounds,
        "idle_was_idle": not before.crowded,
        "cores": before.cores,
        "others_busy_cores_before": before.others,
        "others_busy_cores_beside": held.others,
        "idle": idle,
        "beside_a_training": busy,
        "ratio_to_idle_default": {
            f"{where}/{v}": round(runs[v]["mlcn_images_per_second"] / base, 3)
            for where, runs in (("idle", idle), ("beside", busy))
            for v in VARIANTS
        },
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"{MODEL} and CapsNet, batch {args.batch_size}, {before.cores} cores; median of {args.rounds} runs "
        f"a figure, variants alternating; other processes held {before.others or 0:.2f} cores "
        f"before, {held.others or 0:.2f} beside the neighbour"
    )
    if before.crowded:
        print("NOT IDLE before the idle rounds: their figures are no idle baseline")
    print(
        f"{'machine':<8} {'variant':<8} {'threads':>7} {'MLCN img/s':>10} {'CapsNet':>8} {'ratio':>6}"
    )
    for where, runs in (("idle", idle), ("beside", busy)):
        for v in VARIANTS:
            r = runs[v]
            print(
                f"{where:<8} {v:<8} {','.join(map(str, r['threads'])):>7} "
                f"{r['mlcn_images_per_second']:>10,.0f} {r['capsnet_images_per_second']:>8,.0f} "
                f"{r['mlcn_images_per_second'] / base:>6.2f}"
            )
    print("ratio: MLCN images/s against the default on the idle machine, same run")
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
