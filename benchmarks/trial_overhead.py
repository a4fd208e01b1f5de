"""Three of a trial's costs outside training, each against what it replaced, in one
process: the collection before the peak-memory measurement, building the model, and
keeping the final checkpoint as the trial's weights.

- **collection**: ``gc.collect()`` on the heap of a process that has run a search
  trial (torch, Optuna, SQLAlchemy imported; the measurement collects before every
  trial), walked whole (before) and with the objects alive before the trial loop
  frozen, as ``run_search`` now runs its trials (``nasmlcn/_heap.py``);
- **build**: the lanes of ``--model`` (default: the 58-lane default-space model of
  ``docs/hardware.md``) drawn by building their ``nn.Conv2d`` layers (before) and by
  drawing the same numbers without them (``initial_conv_tensors``); both under one
  seed, checked equal;
- **keep**: a checkpoint file the size of that model's (weights and Adam's two
  moments) stored after the last epoch, then kept as the weights: uploaded as a
  second copy (before; what still happens when the file changed since) or the
  stored copy recorded as the weights (now).

The two sides alternate ``--repeats`` times; each figure is a median, with the
saving per trial and the ratio now / before (below 1: now is faster). On this
machine's disk and core; a GPU machine's disk and heap differ.

    python benchmarks/trial_overhead.py [--model LANES] [--repeats 5] [--json]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from nasmlcn.reproduce.engines.common import exit_with, say

MODEL = "26*mlcn1:1x2,22*mlcn2:1x4,8*mlcn1:3x4,2*mlcn2:2x4"


def _heap(folder: Path) -> None:
    """Runs one small search trial here, so the heap holds what a worker's does."""
    from nasmlcn.search import SearchConfig, run_search

    config = SearchConfig(
        devices="1xK80",
        mem="12GB",
        flops="0.05x",
        dataset="synthetic",
        epochs=1,
        train_limit=40,
        val_limit=20,
        trials=1,
        storage=f"sqlite:///{folder / 'heap.db'}",
        run_on="cpu",
    )
    run_search(config)


def _collectors(lanes: str) -> tuple[Callable[[], float], Callable[[], float]]:
    """One collection, as the peak-memory measurement makes before a trial, with a
    trial's own objects alive (its model and optimizer, made after any freeze): over
    the whole heap, or with the heap frozen as on entering the trial loop (once per
    search, not timed here)."""
    from nasmlcn.models import build_model
    from nasmlcn.specs import MLCNSpec

    def collect(frozen: bool) -> float:
        if frozen:
            gc.freeze()
        try:
            model = build_model(MLCNSpec.from_lanes(lanes))
            optimizer = torch.optim.Adam(model.parameters())
            t = time.perf_counter()
            gc.collect()
            took = time.perf_counter() - t
            del model, optimizer
            return took
        finally:
            if frozen:
                gc.unfreeze()

    return (lambda: collect(False)), (lambda: collect(True))


def _builders(lanes: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """Draws of the model's lane parameters, through its layers and without."""
    from nasmlcn.models._conv import conv_layers
    from nasmlcn.models._lane import LaneKind
    from nasmlcn.specs import parse_lanes

    specs = parse_lanes(lanes)

    def kinds() -> list[LaneKind]:  # new ones each time, as a model build makes them
        return [LaneKind(s, (1, 28, 28), 10, "vector", 3) for s in specs]

    def layers() -> list[list[torch.Tensor]]:
        return [[p.detach() for p in conv_layers(k.layout.convs).parameters()] for k in kinds()]

    def draws() -> list[list[torch.Tensor]]:
        from nasmlcn.models._conv import initial_conv_tensors

        return [initial_conv_tensors(k.convs) for k in kinds()]

    torch.manual_seed(0)
    want = [t for lane in layers() for t in lane]
    torch.manual_seed(0)
    got = [t for lane in draws() for t in lane]  # equal, or the comparison means nothing
    assert all(torch.equal(a, b) for a, b in zip(got, want, strict=True))
    return layers, draws


def _keepers(lanes: str, folder: Path) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """A trial's last epoch stored and its weights kept: uploaded again, or reused."""
    import optuna

    from nasmlcn.models import build_model
    from nasmlcn.specs import MLCNSpec
    from nasmlcn.study import open_store
    from nasmlcn.study._artifacts import TrialFiles

    model = build_model(MLCNSpec.from_lanes(lanes))
    size = 3 * sum(p.numel() * p.element_size() for p in model.parameters())
    body = torch.randint(0, 255, (size,), dtype=torch.uint8).numpy().tobytes()
    study = optuna.create_study(storage=f"sqlite:///{folder / 'keep.db'}")
    store = open_store(folder / "artifacts")

    def keep(changed: bool) -> None:
        files = TrialFiles(store, study.ask(), folder)
        files.path.write_bytes(body)
        files.saved(1)
        if changed:  # as before: the file is uploaded as a second copy
            os.utime(files.path, ns=(1, 1))  # the stamp differs; the bytes do not
        files.keep()
        files.close()

    return (lambda: keep(True)), (lambda: keep(False))


def _alternate(before: Callable[[], Any], now: Callable[[], Any], repeats: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {"before": [], "now": []}
    for i in range(repeats):
        order = (
            (("before", before), ("now", now)) if i % 2 == 0 else (("now", now), ("before", before))
        )
        for name, fn in order:
            t = time.perf_counter()
            timed = fn()  # a float: the seconds of the part it timed itself
            times[name].append(timed if isinstance(timed, float) else time.perf_counter() - t)
    b, n = statistics.median(times["before"]), statistics.median(times["now"])
    return {"before_s": b, "now_s": n, "saved_s": b - n, "ratio": n / b, "runs": repeats}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=MODEL, help="lanes [default: the 58-lane model]")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="nasmlcn-overhead-") as tmp:
        folder = Path(tmp)
        say("a search trial, for a worker's heap ...")
        _heap(folder)
        rows = {"collection": _alternate(*_collectors(args.model), args.repeats)}
        say("collection done; build ...")
        rows["build"] = _alternate(*_builders(args.model), args.repeats)
        say("build done; keep ...")
        rows["keep"] = _alternate(*_keepers(args.model, folder), args.repeats)
    result = {"model": args.model, "objects": len(gc.get_objects()), "rows": rows}
    result["saved_per_trial_s"] = sum(r["saved_s"] for r in rows.values())
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"{args.model}; heap of {result['objects']:,} objects; median of {args.repeats} "
        "alternating runs per side, 1 thread"
    )
    print(f"{'cost':<11} {'before s':>9} {'now s':>9} {'saved s':>9} {'now/before':>10}")
    for name, r in rows.items():
        print(
            f"{name:<11} {r['before_s']:9.3f} {r['now_s']:9.3f} {r['saved_s']:9.3f} "
            f"{r['ratio']:9.2f}x"
        )
    print(f"saved per trial: {result['saved_per_trial_s']:.3f} s")
    return 0


if __name__ == "__main__":
    exit_with(main())
