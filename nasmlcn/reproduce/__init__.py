"""Reproducing the seed papers' results (pure Python: no torch here).

Each result is a recipe in ``studies/`` with a ``[reproduce]`` table: the paper and
its table or figure, the engine that measures it (a module of ``nasmlcn.reproduce.engines``, or a search),
the engine's arguments at three scales, and the paper's transcribed figures with
the path of ours in the engine's output. :func:`reproduce` runs one into a folder
(resumably) and writes its report (HTML, PNG, CSV) and the index of all reports.
"""

from __future__ import annotations

from nasmlcn.reproduce._catalog import all_recipes, engines_dir, find_recipe, studies_dir
from nasmlcn.reproduce._papers import PAPERS, Paper
from nasmlcn.reproduce._recipe import SCALES, Comparison, Recipe, Scale, load_recipe
from nasmlcn.reproduce._report import Report, read_summaries, write_index, write_report
from nasmlcn.reproduce._reproduce import DEFAULT_OUT, reproduce
from nasmlcn.reproduce._runner import RunOutcome, run_result, run_state
from nasmlcn.reproduce._values import evaluate
from nasmlcn.reproduce._verdict import VERDICTS, Row, Verdict, compare, verdict

__all__ = [
    "DEFAULT_OUT",
    "PAPERS",
    "SCALES",
    "VERDICTS",
    "Comparison",
    "Paper",
    "Recipe",
    "Report",
    "Row",
    "RunOutcome",
    "Scale",
    "Verdict",
    "all_recipes",
    "compare",
    "engines_dir",
    "evaluate",
    "find_recipe",
    "load_recipe",
    "read_summaries",
    "reproduce",
    "run_result",
    "run_state",
    "studies_dir",
    "verdict",
    "write_index",
    "write_report",
]
