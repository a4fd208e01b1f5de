"""``nasmlcn reproduce``: the seed papers' results, run and reported beside the
papers' numbers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from nasmlcn.cli._console import err, out
from nasmlcn.cli._options import JSON, local_file
from nasmlcn.errors import ReproduceError

if TYPE_CHECKING:
    from nasmlcn.reproduce import Recipe

ALL = "all"


def _minutes(value: float) -> str:
    if value >= 90:
        return f"{value / 60:.0f} h" if value >= 600 else f"{value / 60:.1f} h"
    return f"{value:.0f} min" if value >= 1 else "<1 min"


def _listing(recipe: Recipe, out_dir: Path) -> dict[str, Any]:
    from nasmlcn.reproduce import PAPERS, SCALES, run_state

    return {
        "name": recipe.name,
        "paper": PAPERS[recipe.paper].short,
        "result": recipe.result,
        "measures": recipe.measures,
        "engine": recipe.engine,
        "recipe": str(recipe.path),
        "scales": {
            s: {
                "minutes_here": recipe.scales[s].minutes_here,
                "minutes_gpu": recipe.scales[s].minutes_gpu,
                "here_measured": recipe.scales[s].measured,
                "gpu_measured": recipe.scales[s].gpu_measured,
                "differs": recipe.scales[s].differs,
                "in_out": run_state(out_dir, recipe, s),
            }
            for s in SCALES
        },
    }


def _list_results(recipes: list[Recipe], out_dir: Path, as_json: bool, force: bool) -> None:
    """``--list``: the results, their times and their runs in ``out_dir`` (it runs
    nothing, so ``force`` is refused)."""
    from nasmlcn.reproduce import SCALES

    if force:
        raise ReproduceError("--list runs nothing: leave --force out, or --list")
    entries = [_listing(r, out_dir) for r in recipes]
    if as_json:
        print(json.dumps({"out": str(out_dir), "results": entries}))
        return
    from rich.table import Table

    table = Table()
    table.add_column("result: what it measures", ratio=1)
    for scale in SCALES:
        table.add_column(f"{scale}\nhere / GPU", no_wrap=True)
    for e in entries:
        times = [
            f"{'' if e['scales'][s]['here_measured'] else '~'}"
            f"{_minutes(e['scales'][s]['minutes_here'])} / "
            f"{'' if e['scales'][s]['gpu_measured'] else '~'}"
            f"{_minutes(e['scales'][s]['minutes_gpu'])}"
            + (f"\n{e['scales'][s]['in_out']} in --out" if e["scales"][s]["in_out"] else "")
            for s in SCALES
        ]
        what = f"[bold]{e['name']}[/bold] ({e['paper']} {e['result']}): {e['measures']}"
        table.add_row(what, *times)
    out.print(table)
    out.print(
        "Times: here = this project's 2-core CI machine; GPU = one H200 (measured, or ~"
        f" estimated); a run in {str(out_dir)!r} (--out) shows its state under its times. Run"
        " one: nasmlcn reproduce NAME --scale SCALE",
        highlight=False,
    )


def reproduce(
    name: str | None = typer.Argument(
        None, help=f"The result to run (see --list), or '{ALL}' for every one."
    ),
    list_: bool = typer.Option(
        False, "--list", help="List the results, their run times and how their runs in --out stand."
    ),
    scale: str = typer.Option(
        "reduced",
        "--scale",
        help="smoke (minutes, checks the plumbing), reduced (within an hour on 2 cores)"
        " or full (the paper's setting, for GPUs).",
    ),
    out_dir: Path = typer.Option(
        Path("reproduce-results"),
        "--out",
        parser=local_file,
        help="Folder of the runs and reports (a second run continues there).",
    ),
    force: bool = typer.Option(
        False,
        "--force",
        help="Run the engine again even if a finished run is there (it still continues"
        " from its own state, such as a search's study: delete the folder to start over).",
    ),
    as_json: bool = JSON,
) -> None:
    """Run a seed paper's result (thesis, NASCaps, FasTrCaps) and report it beside the
    paper's numbers: OUT/NAME/SCALE/report.html, .png, .csv and OUT/index.html."""
    from nasmlcn.reproduce import SCALES, all_recipes, find_recipe
    from nasmlcn.reproduce import reproduce as run

    if name is None and not list_:
        raise ReproduceError("name a result to run (see 'nasmlcn reproduce --list'), or 'all'")
    if scale not in SCALES:
        raise ReproduceError(f"unknown --scale {scale!r} (scales: {', '.join(SCALES)})")
    # Checked with --list too: a misspelt name or scale is refused, never ignored.
    named = None if name is None or name == ALL else find_recipe(name)
    if list_:  # of the named result alone, if one is named; and how it stands in --out
        _list_results(all_recipes() if named is None else [named], out_dir, as_json, force)
        return
    recipes = all_recipes() if named is None else [named]
    from nasmlcn._io import probe_folder

    problem = probe_folder(out_dir)
    if problem is not None:
        raise ReproduceError(f"--out {str(out_dir)!r}: cannot write there ({problem})")
    shown = err if as_json else out
    reports = []
    failed: dict[str, str] = {}
    for i, recipe in enumerate(recipes, 1):
        s = recipe.scale(scale)
        estimate = ("" if s.measured else "~") + _minutes(s.minutes_here)
        shown.print(
            f"[{i}/{len(recipes)}] {recipe.name}: {recipe.result} ({scale}, {estimate} here)",
            style="bold",
        )
        try:
            report = run(recipe, scale, out_dir, force=force)
        except ReproduceError as error:
            if len(recipes) == 1:
                raise
            failed[recipe.name] = str(error).splitlines()[0]  # the rest: its engine.log
            shown.print(f"  failed: {failed[recipe.name]}", style="red")
            continue
        shown.print(f"  {report.verdict.line}")
        shown.print(f"  report: {report.folder / 'report.html'}")
        reports.append(report)
    index = out_dir / "index.html"
    if as_json:
        results = [r.to_dict() for r in reports]
        print(json.dumps({"index": str(index), "results": results, "failed": failed}))
    else:
        out.print(f"index: {index}")
    if failed:
        raise ReproduceError(
            f"{len(failed)} of {len(recipes)} results failed ({', '.join(failed)}); the others"
            f" are in {index}"
        )
