"""What a process pays outside its work: its exit after torch, and an image export.

Two figures, each against its baseline measured in the same run, alternating:

- **exit**: a process that imported torch and nasmlcn's models and built a model
  prints the time and ends; the figure is the time from that print to the
  parent seeing it end. ``frozen``: it calls ``nasmlcn._exit.before_exit`` first,
  as the CLI, a spawned rank, a pool worker and a measurement child do;
  ``plain``: it does not (the interpreter's exit collection walks every object).
- **export**: one figure written as a PNG, in one process. ``kept``: nasmlcn's
  ``write_images``, whose Chromium was started by an export before
  (``nasmlcn.dashboard._chromium``); ``oneshot``: Kaleido's
  ``write_fig_from_object_sync``, which starts and closes a Chromium per call
  (what ``write_images`` did before).

Usage::

    python benchmarks/process_costs.py [--runs 8] [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nasmlcn.reproduce.engines.common import median, paired, say

_CHILD = """
import time, torch
from nasmlcn.models import build_model
from nasmlcn.specs import MLCNSpec
build_model(MLCNSpec.from_lanes("4*mlcn2:3x3"))
if {frozen}:
    from nasmlcn._exit import before_exit
    before_exit()
print(time.time(), flush=True)
"""


def _exit_seconds(frozen: bool) -> float:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD.format(frozen=frozen)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    printed = float(child.stdout.readline())
    child.wait()
    ended = time.time()
    if child.returncode != 0:
        raise SystemExit(f"the child exited with {child.returncode}")
    return ended - printed


def exit_figures(runs: int) -> dict[str, Any]:
    seconds: dict[bool, list[float]] = {False: [], True: []}  # frozen? -> exit times
    for i in range(runs):  # alternating, which one goes first too
        for frozen in (False, True) if i % 2 == 0 else (True, False):
            seconds[frozen].append(_exit_seconds(frozen))
        say(
            f"exit {i + 1}/{runs}: plain {seconds[False][-1]:.3f} s, frozen {seconds[True][-1]:.3f} s"
        )
    return _figures(seconds[False], seconds[True], "plain", "frozen")


def export_figures(runs: int) -> dict[str, Any]:
    import kaleido
    import plotly.graph_objects as go

    from nasmlcn.dashboard._export import write_images
    from nasmlcn.dashboard._figures import WIDTH

    figure = go.Figure(go.Scatter(x=[1, 2, 3, 4], y=[3, 1, 4, 2], mode="lines+markers"))
    oneshot: list[float] = []
    kept: list[float] = []
    with tempfile.TemporaryDirectory(prefix="nasmlcn-bench-") as folder:
        out = Path(folder)
        write_images({"warm": figure}, out, ["png"])  # the kept browser starts here

        def time_kept(i: int) -> None:
            tick = time.perf_counter()
            write_images({f"k{i}": figure}, out, ["png"])
            kept.append(time.perf_counter() - tick)

        def time_oneshot(i: int) -> None:
            spec = {
                "fig": figure.to_plotly_json(),
                "path": out / f"o{i}.png",
                "opts": {"format": "png", "width": WIDTH, "height": 500},
            }
            tick = time.perf_counter()
            kaleido.write_fig_from_object_sync([spec], kopts={"mathjax": False})
            oneshot.append(time.perf_counter() - tick)

        for i in range(runs):
            order = (time_oneshot, time_kept) if i % 2 == 0 else (time_kept, time_oneshot)
            for timed in order:
                timed(i)
            say(f"export {i + 1}/{runs}: oneshot {oneshot[-1]:.3f} s, kept {kept[-1]:.3f} s")
    return _figures(oneshot, kept, "oneshot", "kept")


def _figures(before: list[float], after: list[float], a: str, b: str) -> dict[str, Any]:
    return {
        "runs": len(before),
        f"{a}_seconds": round(median(before), 4),
        f"{b}_seconds": round(median(after), 4),
        "speedup": round(median(before) / median(after), 2),
        "saved_seconds": {
            k: round(v, 4) if isinstance(v, float) else v for k, v in paired(before, after).items()
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8, help="runs of each side (alternating)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error(f"--runs must be >= 2 (an interval needs two), got {args.runs}")
    result = {"exit": exit_figures(args.runs), "export": export_figures(args.runs)}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    sides = {"exit": ("plain", "frozen", "process"), "export": ("oneshot", "kept", "export")}
    for name, (a, b, each) in sides.items():
        r = result[name]
        s = r["saved_seconds"]
        print(
            f"{name}: {a} {r[f'{a}_seconds']:.3f} s, {b} {r[f'{b}_seconds']:.3f} s "
            f"(medians of {r['runs']} runs each), {r['speedup']}x; saved "
            f"{s['mean']:.3f} s per {each} (95% CI {s['low']:.3f} to {s['high']:.3f})"
        )
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
