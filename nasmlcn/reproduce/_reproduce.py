"""``reproduce``: run a seed result at a scale and write its report and the index."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from nasmlcn.reproduce._catalog import all_recipes
from nasmlcn.reproduce._recipe import Recipe
from nasmlcn.reproduce._report import Report, write_index, write_report
from nasmlcn.reproduce._runner import run_result

DEFAULT_OUT = Path("reproduce-results")


def reproduce(
    recipe: Recipe,
    scale: str = "reduced",
    out: Path = DEFAULT_OUT,
    *,
    force: bool = False,
    echo: TextIO | None = sys.stderr,
) -> Report:
    """Runs ``recipe`` at ``scale`` into ``out/NAME/SCALE`` (continuing an earlier
    run there), writes its report and rewrites ``out/index.html``.

    Raises:
        ReproduceError: The recipe lacks the scale, or its engine failed.
    """
    recipe.scale(scale)
    outcome = run_result(recipe, scale, out, force=force, echo=echo)
    report = write_report(recipe, scale, outcome.folder, outcome.output)
    write_index(out, all_recipes())
    return report
