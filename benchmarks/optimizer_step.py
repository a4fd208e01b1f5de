"""Adam on a CPU: torch's fused Adam (what training uses now) against its default loop
over the tensors (what CPU training used before), in one process.

For each ``--model``, on 1 thread, the two optimizers over the same model alternate
``--repeats`` times (the order swapped each time):

- **Adam step**: ``optimizer.step()`` alone, on fixed random gradients, the median of
  ``--steps`` steps;
- **training step**: forward, margin and reconstruction loss, backward and Adam on a
  fixed random batch of ``--batch`` 28x28 images (the trainer's own step, as
  ``nasmlcn train`` runs it on a CPU), the median of ``--steps`` steps.

Each figure is the median over the repeats, with the ratio fused / loop (below 1:
fused is faster) and what fused saves a step, loop - fused paired by run, with its
95 % t interval (a tie when it holds 0). Before the timing, the two are checked to agree: the same model
trained 5 steps with each ends within float32 rounding (the largest difference is
printed).

    python benchmarks/optimizer_step.py [--model LANES ...] [--batch 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from nasmlcn.models import build_model
from nasmlcn.reproduce.engines.common import exit_with, paired, say
from nasmlcn.specs import MLCNSpec
from nasmlcn.training._step import TrainStep

MODELS = (
    "2*mlcn2:4x1",  # the quickstart's model
    "8*mlcn2:4x1",  # thesis Table 4.1
    "26*mlcn1:1x2,22*mlcn2:1x4,8*mlcn1:3x4,2*mlcn2:2x4",  # the 58-lane default-space model
)
SIDES = {"loop": None, "fused": True}  # torch.optim.Adam's ``fused``
VERDICTS = {"ahead": "fused faster", "behind": "fused slower", "tie": "tie"}


def _model(lanes: str) -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(MLCNSpec.from_lanes(lanes)).train()


def _train_step(model: torch.nn.Module, fused: bool | None, batch: int) -> Callable[[], object]:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, fused=fused)
    generator = torch.Generator().manual_seed(1)
    x = torch.rand(batch, 1, 28, 28, generator=generator)
    y = torch.randint(0, 10, (batch,), generator=generator)
    step = TrainStep(model, optimizer, inputs=lambda images: images, reconstruction_weight=5e-4)
    return lambda: step(x, y)


def _adam_step(model: torch.nn.Module, fused: bool | None) -> Callable[[], object]:
    params = list(model.parameters())
    generator = torch.Generator().manual_seed(2)
    for p in params:
        p.grad = torch.randn(p.shape, generator=generator)
    return torch.optim.Adam(params, lr=1e-3, fused=fused).step


def largest_difference(lanes: str, batch: int, steps: int = 5) -> float:
    """The largest parameter difference after ``steps`` training steps with each."""
    trained = []
    for fused in SIDES.values():
        model = _model(lanes)
        step = _train_step(model, fused, batch)
        for _ in range(steps):
            step()
        trained.append([p.detach() for p in model.parameters()])
    return max(float((a - b).abs().max()) for a, b in zip(*trained, strict=True))


def _median_ms(fn: Callable[[], object], steps: int) -> float:
    fn()  # the first call allocates the optimizer's state
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


def _alternate(make: Callable[[bool | None], Callable[[], object]], args: Any) -> dict[str, Any]:
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    for i in range(args.repeats):
        order = list(SIDES.items()) if i % 2 == 0 else list(SIDES.items())[::-1]
        for side, flag in order:
            times[side].append(_median_ms(make(flag), args.steps))
    loop, fused = statistics.median(times["loop"]), statistics.median(times["fused"])
    row: dict[str, Any] = {
        "loop_ms": loop,
        "fused_ms": fused,
        "ratio": fused / loop,
        "runs": args.repeats,
    }
    if args.repeats > 1:  # loop - fused, paired by run: what fused saves a step
        row["saved_ms"] = paired(times["loop"], times["fused"])
    return row


def measure(lanes: str, args: Any) -> dict[str, Any]:
    """One model's row: its size, the check, and both timings."""
    model = _model(lanes)
    params = list(model.parameters())
    row: dict[str, Any] = {
        "model": lanes,
        "tensors": len(params),
        "params": sum(p.numel() for p in params),
        "largest_difference": largest_difference(lanes, args.batch),
    }
    say(f"{lanes}: Adam step ...")
    row["adam_step"] = _alternate(lambda fused: _adam_step(_model(lanes), fused), args)
    say(f"{lanes}: training step at batch {args.batch} ...")
    row["training_step"] = _alternate(
        lambda fused: _train_step(_model(lanes), fused, args.batch), args
    )
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", help="lanes (repeatable) [default: 3]")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per measurement")
    parser.add_argument("--repeats", type=int, default=5, help="alternating runs per side")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = [measure(lanes, args) for lanes in args.model or MODELS]
    result = {"batch": args.batch, "threads": 1, "rows": rows}
    if args.json:
        print(json.dumps(result))
        return 0
    print(
        f"Adam on a CPU, 1 thread: median of {args.repeats} alternating runs per side, "
        f"each the median of {args.steps} steps; training steps at batch {args.batch}"
    )
    print(
        f"{'model':<40} {'tensors':>7} {'what':<9} {'loop ms':>8} {'fused ms':>8} {'ratio':>6}  "
        "saved ms [95 % CI]"
    )
    for row in rows:
        for what, key in (("Adam", "adam_step"), ("training", "training_step")):
            r = row[key]
            saved = r.get("saved_ms")
            interval = (
                f"{saved['mean']:+.2f} [{saved['low']:+.2f}, {saved['high']:+.2f}] "
                f"{VERDICTS[saved['verdict']]}"
                if saved
                else "-"
            )
            print(
                f"{row['model'][:40]:<40} {row['tensors']:7d} {what:<9} {r['loop_ms']:8.2f} "
                f"{r['fused_ms']:8.2f} {r['ratio']:5.2f}x  {interval}"
            )
    worst = max(row["largest_difference"] for row in rows)
    print(f"largest parameter difference after 5 training steps: {worst:.1e}")
    return 0


if __name__ == "__main__":
    exit_with(main())
