"""What a training step costs a GPU's host, counted on the CPU: top-level aten ops per
step (forward, margin + reconstruction loss, backward, Adam) and the parameter
tensors Adam updates, for CapsNet, the MLCNs of the GPU-speed issue and seeded models
of the default space. Lanes are grouped as on a GPU (every kind stacked) and Adam is
the one a GPU run builds (fused): :func:`nasmlcn.measure.count_step_ops`. A count is
exact and the same on every machine, so one run is the figure; the ratio to CapsNet
is taken in the same run.

Beside it, the same model run lane by lane (``fuse_lanes=False``: what every lane
costs on its own), to show what stacking saves.

    python benchmarks/step_ops.py            # a table
    python benchmarks/step_ops.py --json
    python benchmarks/step_ops.py --quick    # CapsNet and two MLCNs, at batch 8

The count does not depend on the batch size (``tests/benchmarks/test_step_ops.py``
checks it), so ``--quick`` counts at batch 8, which a CPU runs in a fraction of the time.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from _space_models import default_space_specs

from nasmlcn.measure import count_step_ops
from nasmlcn.specs import ArchSpec, CapsNetSpec, MLCNSpec, format_lanes

ISSUE_MODELS = (
    "8*mlcn2:4x1",  # thesis Table 4.1
    "32*mlcn2:2x1",
    "26*mlcn1:1x2,22*mlcn2:1x4,8*mlcn1:3x4,2*mlcn2:2x4",  # a 58-lane default-space trial
)
"""The MLCNs whose H100 figures the GPU-speed issue gives."""

SPACE_MODELS = 4
"""Seeded default-space models (``--devices 8xK80 --mem 12GB``, random parameters)."""


def _row(name: str, spec: ArchSpec, capsnet_ops: int | None, batch: int) -> dict[str, Any]:
    stacked = count_step_ops(spec, batch)
    row: dict[str, Any] = {
        "model": name,
        "lanes": getattr(spec, "num_lanes", 0),
        "kinds": len(set(getattr(spec, "lanes", ()))),
        "ops": stacked.ops,
        "optimizer_tensors": stacked.optimizer_tensors,
        "top_ops": dict(stacked.top),
    }
    if isinstance(spec, MLCNSpec):
        row["ops_lane_by_lane"] = count_step_ops(spec, batch, fuse=False).ops
    if capsnet_ops is not None:
        row["vs_capsnet"] = stacked.ops / capsnet_ops
    return row


def measure(quick: bool, batch: int = 100) -> list[dict[str, Any]]:
    """One row per model, CapsNet first, counted at ``batch``."""
    models: list[tuple[str, ArchSpec]] = [("capsnet", CapsNetSpec())]
    models += [(lanes, MLCNSpec.from_lanes(lanes)) for lanes in ISSUE_MODELS[: 2 if quick else 3]]
    if not quick:
        specs = default_space_specs(SPACE_MODELS, 0, devices="8xK80", mem="12GB")
        models += [(f"space seed 0 #{i}: {format_lanes(s.lanes)}", s) for i, s in enumerate(specs)]
    rows = [_row(*models[0], None, batch)]
    rows[0]["vs_capsnet"] = 1.0
    rows += [_row(name, spec, rows[0]["ops"], batch) for name, spec in models[1:]]
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="CapsNet and two MLCNs only, at batch 8"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    batch = 8 if args.quick else 100
    rows = measure(args.quick, batch)
    if args.json:
        report = {"grouping": "cuda", "optimizer": "fused Adam", "batch": batch, "models": rows}
        print(json.dumps(report, indent=2))
        return 0
    print(
        f"top-level aten ops per training step, batch {batch}, lanes grouped and Adam as on a GPU"
    )
    print(
        f"{'model':60} {'lanes':>5} {'kinds':>5} {'ops':>6} {'x CapsNet':>9} {'Adam tensors':>12} {'lane by lane':>12}"
    )
    for r in rows:
        name = r["model"] if len(r["model"]) <= 60 else r["model"][:57] + "..."
        by_lane = r.get("ops_lane_by_lane", "")
        print(
            f"{name:60} {r['lanes']:>5} {r['kinds']:>5} {r['ops']:>6} {r['vs_capsnet']:>8.2f}x "
            f"{r['optimizer_tensors']:>12} {by_lane:>12}"
        )
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
