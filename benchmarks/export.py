"""How long ``nasmlcn export`` takes on a 500-trial study, and how big the report is.

Makes a 500-trial, three-objective proxy study (NSGA-II, 8xK80) in a temporary
SQLite file, then times ``nasmlcn export`` end to end in a fresh process (imports,
reading the study, 8 figures, the HTML report, PNG and SVG of every figure, CSV
and JSON of every trial) and prints the size of the report. Target: <= 30 s with
PNG on 2 cores, report <= 10 MB.

Baseline, measured in the same run: Optuna's own ``optuna.visualization`` plots of
the same study (Pareto front of the first two objectives, hypervolume history,
optimisation history and parameter importances of each objective: also 8
figures), each written to PNG and SVG with ``fig.write_image`` one by one, which
is what a hand-written export script does; every call starts a Chromium.

    python benchmarks/export.py [--trials 500] [--no-baseline] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from optuna.trial import FrozenTrial

NASMLCN = [sys.executable, "-m", "nasmlcn"]


def make_study(folder: Path, trials: int) -> tuple[str, str, float]:
    from nasmlcn.dashboard import DashboardObserver
    from nasmlcn.search import SearchConfig, run_search

    url = f"sqlite:///{folder / 'bench.db'}"
    config = SearchConfig(
        evaluator="proxy",
        storage=url,
        trials=trials,
        epochs=5,
        objectives=("accuracy", "latency", "memory"),
        sampler="nsga2",
        devices="8xK80",
        prune=False,  # every trial complete, as in the README's figures
    )
    tick = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_search(config, observers=[DashboardObserver()])  # as the CLI does
    return url, result.study, time.perf_counter() - tick


def time_export(url: str, study: str, out: Path) -> dict[str, Any]:
    """``nasmlcn export`` in a fresh process, as a user runs it."""
    tick = time.perf_counter()
    proc = subprocess.run(
        [*NASMLCN, "export", "--study", study, "--storage", url, "--out", str(out), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    wall = time.perf_counter() - tick
    result = json.loads(proc.stdout)
    return {
        "wall_s": wall,
        "steps_s": result["seconds"],
        "files": len(result["files"]),
        "figures": len(result["figures"]),
        "html_bytes": result["html_bytes"],
    }


def _objective(i: int) -> Callable[[FrozenTrial], float]:
    return lambda trial: trial.values[i]


def time_baseline(url: str, study_name: str, out: Path) -> dict[str, Any]:
    """Optuna's plots, each written to PNG and SVG with ``write_image`` one by one."""
    import logging

    import optuna
    import optuna.visualization as vis

    # Kaleido's browser driver logs a harmless decoding traceback now and then.
    logging.getLogger("choreographer").setLevel(logging.CRITICAL)

    tick = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = optuna.load_study(study_name=study_name, storage=url)
        names = study.metric_names or ["accuracy", "latency_s", "memory_MiB"]
        done = [t for t in study.trials if t.values is not None]
        worst = [
            min(t.values[i] for t in done)
            if d.name == "MAXIMIZE"
            else max(t.values[i] for t in done)
            for i, d in enumerate(study.directions)
        ]
        figures = {
            "pareto_front": vis.plot_pareto_front(
                study, targets=lambda t: (t.values[0], t.values[1]), target_names=names[:2]
            ),
            "hypervolume_history": vis.plot_hypervolume_history(study, worst),
        }
        for i, name in enumerate(names):
            target = _objective(i)
            figures[f"history_{name}"] = vis.plot_optimization_history(
                study, target=target, target_name=name
            )
            figures[f"importances_{name}"] = vis.plot_param_importances(
                study, target=target, target_name=name
            )
    built = time.perf_counter() - tick
    out.mkdir(parents=True, exist_ok=True)
    for name, fig in figures.items():
        for ext in ("png", "svg"):
            fig.write_image(out / f"{name}.{ext}", width=1000, height=500)
    return {"wall_s": time.perf_counter() - tick, "build_s": built, "figures": len(figures)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--no-baseline", action="store_true", help="Skip Optuna's plots.")
    parser.add_argument("--json", action="store_true", help="Print one JSON object.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url, study, search_s = make_study(folder, args.trials)
        ours = time_export(url, study, folder / "export")
        base = None if args.no_baseline else time_baseline(url, study, folder / "baseline")
    report = {
        "trials": args.trials,
        "cpus": os.cpu_count(),
        "search_s": search_s,
        "nasmlcn_export": ours,
        "optuna_write_image_baseline": base,
    }
    if args.json:
        print(json.dumps(report))
        return
    print(f"{args.trials}-trial proxy study (3 objectives, NSGA-II) made in {search_s:.1f} s")
    steps = ", ".join(f"{k} {v:.1f}" for k, v in ours["steps_s"].items() if k != "total")
    print(
        f"nasmlcn export (html,png,svg,csv,json; {ours['figures']} figures, {ours['files']} "
        f"files): {ours['wall_s']:.1f} s wall in a fresh process ({steps} s)"
    )
    print(f"report.html: {ours['html_bytes'] / 1e6:.2f} MB (limit 10 MB)")
    if base is not None:
        ratio = base["wall_s"] / ours["wall_s"]
        print(
            f"baseline, Optuna's {base['figures']} plots, write_image one by one (png+svg): "
            f"{base['wall_s']:.1f} s (building {base['build_s']:.1f} s); nasmlcn is x{ratio:.1f} faster"
        )


if __name__ == "__main__":
    main()
