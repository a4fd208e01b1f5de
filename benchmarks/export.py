"""How long ``nasmlcn export`` takes on a 500-trial study, and how big the report is.

Makes a 500-trial, three-objective proxy study (NSGA-II, 8xK80) in a temporary
SQLite file, then times ``nasmlcn export`` end to end in a fresh process (imports,
reading the study, 8 figures, the HTML report, PNG and SVG of every figure, CSV
and JSON of every trial) and prints the size of the report. Target: <= 30 s with
PNG on 2 cores, report <= 10 MB.

Baseline, measured in the same run and alike: Optuna's own ``optuna.visualization``
plots of the same study (Pareto front of the first two objectives, hypervolume
history, optimisation history and parameter importances of each objective: also 8
figures), each written to PNG and SVG with ``fig.write_image`` one by one, which
is what a hand-written export script does, also in a fresh process timed from its
start. The ratio compares it with ``nasmlcn export --format png,svg`` (the same
8 figures x 2 formats). The sides run in alternating order over ``--rounds``
rounds (default 2); figures are medians over the rounds.

    python benchmarks/export.py [--trials 500] [--rounds 2] [--no-baseline] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
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


def time_export(url: str, study: str, out: Path, formats: str) -> dict[str, Any]:
    """``nasmlcn export`` in a fresh process, as a user runs it."""
    tick = time.perf_counter()
    proc = subprocess.run(
        [
            *NASMLCN,
            "export",
            "--study",
            study,
            "--storage",
            url,
            "--out",
            str(out),
            "--json",
            "--format",
            formats,
        ],
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
    """:func:`baseline` in a fresh process, timed from its start as ``time_export``."""
    tick = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--baseline-only", url, study_name, str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    return {**json.loads(proc.stdout.splitlines()[-1]), "wall_s": time.perf_counter() - tick}


def baseline(url: str, study_name: str, out: Path) -> dict[str, Any]:
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
    return {"in_process_s": time.perf_counter() - tick, "build_s": built, "figures": len(figures)}


def _median(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-baseline", action="store_true", help="Skip Optuna's plots.")
    parser.add_argument("--json", action="store_true", help="Print one JSON object.")
    parser.add_argument(
        "--baseline-only", nargs=3, metavar=("URL", "STUDY", "OUT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.baseline_only:  # the baseline's own fresh process
        url, study, out = args.baseline_only
        print(json.dumps(baseline(url, study, Path(out))))
        return
    sides: dict[str, list[dict[str, Any]]] = {"all": [], "png_svg": [], "optuna": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        url, study, search_s = make_study(folder, args.trials)
        order = [side for side in sides if not (args.no_baseline and side == "optuna")]
        for r in range(args.rounds):
            for side in order if r % 2 == 0 else reversed(order):
                out = folder / f"{side}-{r}"
                if side == "optuna":
                    sides[side].append(time_baseline(url, study, out))
                else:
                    formats = "all" if side == "all" else "png,svg"
                    sides[side].append(time_export(url, study, out, formats))
    ours = sides["all"][-1]
    report: dict[str, Any] = {
        "trials": args.trials,
        "rounds": args.rounds,
        "cpus": os.cpu_count(),
        "search_s": search_s,
        "nasmlcn_export_all": {**ours, "wall_s": _median(sides["all"], "wall_s")},
        "nasmlcn_export_png_svg_s": _median(sides["png_svg"], "wall_s"),
        "optuna_write_image_baseline_s": (
            _median(sides["optuna"], "wall_s") if sides["optuna"] else None
        ),
        "runs": sides,
    }
    if args.json:
        print(json.dumps(report))
        return
    print(f"{args.trials}-trial proxy study (3 objectives, NSGA-II) made in {search_s:.1f} s")
    steps = ", ".join(f"{k} {v:.1f}" for k, v in ours["steps_s"].items() if k != "total")
    print(
        f"nasmlcn export, all formats (html,png,svg,csv,json; {ours['figures']} figures, "
        f"{ours['files']} files): {report['nasmlcn_export_all']['wall_s']:.1f} s wall in a fresh "
        f"process, median of {args.rounds} (last: {steps} s)"
    )
    print(f"report.html: {ours['html_bytes'] / 1e6:.2f} MB (limit 10 MB)")
    png_svg = report["nasmlcn_export_png_svg_s"]
    print(f"nasmlcn export --format png,svg: {png_svg:.1f} s wall in a fresh process")
    base = report["optuna_write_image_baseline_s"]
    if base is not None:
        built = _median(sides["optuna"], "build_s")
        print(
            f"baseline, Optuna's {sides['optuna'][0]['figures']} plots, write_image one by one "
            f"(png+svg), fresh process: {base:.1f} s (building {built:.1f} s); "
            f"nasmlcn png,svg is x{base / png_svg:.1f} faster (medians of {args.rounds} rounds, "
            "alternating order)"
        )


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    main()
    exit_with(0)
