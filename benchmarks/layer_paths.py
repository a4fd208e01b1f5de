"""A lane stack's later conv layers, grouped convolution against unfold + batched
matrix product: the step time of whole MLCNs under each layer path.

An MLCN's stacks run their later conv layers as one grouped convolution a layer
(``layer_path = "grouped"``, the default) or as one unfold and one batched matrix
product, the lanes as the product's batch (``"bmm"``, ``nasmlcn/models/_bmm_conv.py``);
the two compute the same (``tests/models/test_layer_paths.py``). For each model, one
training pass (forward with labels, margin + reconstruction loss, backward; no
optimizer step, the same for both) at batch ``--batch`` on random images, the two
paths alternating ``--repeats`` times after ``--warmup`` rounds, on one model (the
path is a plain attribute: same parameters, same process); the figure is each path's
median and the ratio bmm / grouped (below 1: bmm is faster).

Which stacks run fused follows the device's rule (on a CPU the wide kinds run lane by
lane, each lane a stack of one; ``nasmlcn.specs.lane_fuses``), or a GPU's with
``--fuse-as cuda`` (every stack fused, as on a GPU). On CUDA the device is
synchronised before every clock reading.

    python benchmarks/layer_paths.py [--model LANES ...] [--batch 32] [--repeats 9]
        [--fuse-as cuda] [--device cpu] [--threads N] [--json]

Also the helpers of ``benchmarks/gpu_speed.py --layer-path`` (the GPU's figures, from
the trainer's own step, eager and CUDA-graphed, with kernels per step): its models'
labels (``<model>@<layer path>``), their order in a round, and bmm against grouped.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch

from nasmlcn.models import MLCN, build_model, capsule_loss
from nasmlcn.reproduce.engines.common import exit_with, say
from nasmlcn.specs import MLCNSpec

MODELS = (
    "8*mlcn2:4x1",  # thesis Table 4.1 (the text's lanes)
    "2*mlcn2-ref:4x1",  # the reference code's lanes: depthwise, 1x1, 3x3 and 6x6 layers
    "26*mlcn1:1x2,22*mlcn2:1x4,8*mlcn1:3x4,2*mlcn2:2x4",  # a 58-lane default-space model
)
LAYER_PATHS = ("grouped", "bmm")
"""An MLCN's ways of running its stacks' later conv layers (``MLCN.layer_path``)."""


def clock(device: torch.device) -> float:
    """``time.perf_counter()`` once everything queued on ``device`` has run."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()


def _pass(model: MLCN, x: torch.Tensor, y: torch.Tensor) -> float:
    """Seconds of one forward and backward pass."""
    began = clock(x.device)
    out = model(x, y)
    loss = capsule_loss(out.lengths, out.reconstruction, x, y).total
    loss.backward()
    return clock(x.device) - began


def measure(lanes: str, args: argparse.Namespace) -> dict[str, Any]:
    """Median milliseconds of a pass of the model ``lanes`` under each layer path."""
    torch.manual_seed(0)
    spec = MLCNSpec.from_lanes(lanes)
    model = build_model(spec).to(args.device)
    assert isinstance(model, MLCN)
    model.train()
    model.lanes.fuse_as = args.fuse_as
    x = torch.rand(args.batch, *spec.input_shape, device=args.device)
    y = torch.randint(0, spec.num_classes, (args.batch,), device=args.device)
    times: dict[str, list[float]] = {path: [] for path in LAYER_PATHS}
    for i in range(args.warmup + args.repeats):
        for path in LAYER_PATHS if i % 2 == 0 else LAYER_PATHS[::-1]:
            model.layer_path = path
            model.zero_grad(set_to_none=True)
            seconds = _pass(model, x, y)
            if i >= args.warmup:
                times[path].append(1e3 * seconds)
    grouped, bmm = (statistics.median(times[path]) for path in LAYER_PATHS)
    say(f"{lanes}: grouped {grouped:.1f} ms, bmm {bmm:.1f} ms ({bmm / grouped:.2f}x)")
    return {
        "model": lanes,
        "grouped_ms": grouped,
        "bmm_ms": bmm,
        "ratio": bmm / grouped,
        "per_repeat_ms": times,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", action="append", help="lanes of a model (repeatable) [default: three]"
    )
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=9, help="timed rounds [default: 9]")
    parser.add_argument("--warmup", type=int, default=2, help="untimed rounds [default: 2]")
    parser.add_argument(
        "--fuse-as", choices=["cuda"], help="group the lanes as this device type does"
    )
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, help="CPU threads [default: torch's]")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    args.device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    rows = [measure(lanes, args) for lanes in args.model or MODELS]
    result = {
        "device": str(args.device),
        "threads": torch.get_num_threads(),
        "batch": args.batch,
        "repeats": args.repeats,
        "fuse_as": args.fuse_as,
        "rows": rows,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    grouping = "every stack fused" if args.fuse_as else "the device's fusion rule"
    print(
        f"forward + backward, batch {args.batch}, {args.device}, {result['threads']} threads, "
        f"{grouping}; median of {args.repeats} alternating passes per path"
    )
    width = max(len(r["model"]) for r in rows)
    print(f"{'model':<{width}} {'grouped':>10} {'bmm':>10} {'bmm/grouped':>11}")
    for r in rows:
        print(
            f"{r['model']:<{width}} {r['grouped_ms']:7.1f} ms {r['bmm_ms']:7.1f} ms "
            f"{r['ratio']:10.2f}x"
        )
    return 0


# gpu_speed.py --layer-path: a timed model is labelled <model>@<layer path>


def split(label: str) -> tuple[str, str | None]:
    """A timed model's name and layer path (None: the model's own) from its label,
    ``<model>`` or ``<model>@<layer path>``."""
    name, _, layer_path = label.partition("@")
    return name, layer_path or None


def round_order(labels: list[str], r: int) -> list[str]:
    """The labels in the order of round ``r``: a model's layer paths side by side,
    reversed in odd rounds."""
    if r % 2 == 0:
        return labels
    by_model: dict[str, list[str]] = {}
    for label in labels:
        by_model.setdefault(split(label)[0], []).append(label)
    return [label for same in by_model.values() for label in reversed(same)]


def compare_layer_paths(
    models: dict[str, dict[str, Any]], kernels_of: Callable[[dict[str, Any]], float | None]
) -> list[dict[str, Any]]:
    """Per model timed under both layer paths (``models`` by label, as gpu_speed.py
    reports them): bmm's images/s over grouped's per batch and execution path
    (eager, graphed), and each layer path's kernels per step (``kernels_of``)."""
    out = []
    for label, facts in models.items():
        name, layer_path = split(label)
        bmm_facts = models.get(f"{name}@bmm")
        if layer_path != "grouped" or bmm_facts is None:
            continue
        rows = []
        for row, bmm in zip(facts["batches"], bmm_facts["batches"], strict=True):
            ratios = {
                path: bmm[path]["images_per_second"] / row[path]["images_per_second"]
                for path in ("eager", "graphed")
                if path in row and path in bmm
            }
            rows.append({"batch": row["batch"], "bmm_over_grouped": ratios})
        kernels = {p: kernels_of(models[f"{name}@{p}"]) for p in LAYER_PATHS}
        out.append({"model": name, "batches": rows, "kernels_per_step": kernels})
    return out


def print_layer_paths(comparisons: list[dict[str, Any]]) -> None:
    """:func:`compare_layer_paths`'s figures as text lines."""
    if comparisons:
        print("\nlayer paths: bmm's images/s over grouped's (above 1: bmm is faster), kernels")
    for c in comparisons:
        kernels = " -> ".join(
            "n/a" if (k := c["kernels_per_step"][p]) is None else f"{k:.0f}" for p in LAYER_PATHS
        )
        for row in c["batches"]:
            ratios = ", ".join(f"{p} {r:.2f}x" for p, r in row["bmm_over_grouped"].items())
            print(f"  {c['model']} batch {row['batch']}: {ratios}; kernels {kernels}")


if __name__ == "__main__":
    exit_with(main())
