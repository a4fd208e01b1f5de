"""The text table of ``benchmarks/gpu_speed.py``'s result (its ``--json`` without
the flag): per model and batch, images/s eager and graphed with their ratios to
CapsNet, the layer paths side by side, and each model's profile."""

from __future__ import annotations

from typing import Any

from _gpu_profile import describe
from layer_paths import print_layer_paths

PATHS = ("eager", "graphed")


def _cell(path: dict[str, Any] | None, key: str, spec: str) -> str:
    value = (path or {}).get(key)
    return "n/a" if value is None else format(value, spec)


def kernels_per_step(model: dict[str, Any]) -> float | None:
    """Kernels per step of ``model`` where it was profiled (the eager path's: a graph
    replays the same kernels); None without CUDA events."""
    profile = model.get("profile") or {}
    for path in PATHS:
        kernels = (profile.get(path) or {}).get("kernels_per_step")
        if kernels is not None:
            return float(kernels)
    return None


def _kernels(model: dict[str, Any], batch: int) -> str:
    """Kernels per step of ``model`` at ``batch``, where it was profiled at that batch."""
    if (model.get("profile") or {}).get("batch") != batch:
        return ""
    kernels = kernels_per_step(model)
    return "n/a" if kernels is None else f"{kernels:.0f}"


def print_table(result: dict[str, Any]) -> None:
    width = max(len(m["label"]) for m in result["models"])
    print(f"{result['device_name']} ({result['device']}), torch {result['torch']}")
    print(result["figures"])
    print(
        f"{'model':<{width}} {'params':>10} {'fwd GFLOP':>9} {'batch':>5} {'eager img/s':>11} "
        f"{'xCaps':>5} {'xFLOP':>5} {'graphed img/s':>13} {'xCaps':>5} {'xFLOP':>5} "
        f"{'graph x':>7} {'capture s':>9} {'kernels':>7}"
    )
    for m in result["models"]:
        gflop = _cell(m, "forward_gflop_per_image", ".3f")
        for row in m["batches"]:
            eager, graphed = row.get("eager"), row.get("graphed")
            line = f"{m['label']:<{width}} {m['params']:>10,} {gflop:>9} {row['batch']:>5} "
            if "error" in row:
                print(line + row["error"])
                continue
            flag = "" if graphed and graphed["graphed"] else " (eager: no CUDA graphs here)"
            print(
                line + f"{_cell(eager, 'images_per_second', '.0f'):>11} "
                f"{_cell(eager, 'ratio_to_capsnet', '.2f'):>5} "
                f"{_cell(eager, 'flop_rate_ratio_to_capsnet', '.2f'):>5} "
                f"{_cell(graphed, 'images_per_second', '.0f'):>13} "
                f"{_cell(graphed, 'ratio_to_capsnet', '.2f'):>5} "
                f"{_cell(graphed, 'flop_rate_ratio_to_capsnet', '.2f'):>5} "
                f"{row['graphed_speedup']:>7.2f} {_cell(graphed, 'capture_seconds', '.2f'):>9} "
                f"{_kernels(m, row['batch']):>7}" + flag
            )
    print_layer_paths(result.get("layer_paths", []))
    for m in result["models"]:
        profile = m.get("profile")
        if not profile:
            continue
        print(f"\nprofile of {m['label']} at batch {profile['batch']}:")
        if "error" in profile:
            print(f"  {profile['error']}")
        for path in PATHS:
            if path in profile:
                figures = profile[path]
                lines = (
                    [f"{path}: {figures['error']}"]
                    if "error" in figures
                    else describe(path, figures)
                )
                print("\n".join("  " + line for line in lines))
