"""A reproduction recipe: the ``[reproduce]`` table of a file in ``studies/``.

One file per seed result. A search recipe (thesis Fig. 6.2) keeps its search
options at the top level, runnable with ``nasmlcn search --config``, and says
``engine = "search"``; any other result names the engine module that measures it
(``engine = "thesis_table"`` is ``nasmlcn/reproduce/engines/thesis_table.py``). The paper's numbers
are data too, one ``[[reproduce.compare]]`` entry each::

    [reproduce]
    paper = "thesis"
    result = "Table 4.1"
    measures = "test accuracy of CapsNet and MLCNs on Fashion-MNIST"
    setting = "20 epochs, batch 100, one P100"
    engine = "thesis_table"

    [reproduce.scales.smoke]
    args = ["--quick", "--results", "{out}/results.json"]
    minutes_here = 1.0
    minutes_gpu = 0.5
    differs = "1 epoch on 500 images: checks the plumbing, measures nothing"

    [[reproduce.compare]]
    label = "CapsNet test accuracy"
    ours = "rows.capsnet.test_accuracy"   # a path into the engine's --json output
    factor = 100                          # fraction -> percent
    unit = "%"
    paper = 91.30
    tolerance = 1.0                       # |ours - paper| <= 1.0 reproduces it
    source = "thesis Table 4.1"

A claim about a difference between two sets of models (more memory, better models)
can name the two samples, ``samples = [A, B]`` (paths to lists of numbers): ``ours``
is then checked by the 95 % interval of ``stat(A) - stat(B)`` (times ``factor``),
``statistic = "mean"`` (Welch's t, the default) or ``"max"`` (the best model; a
seeded percentile bootstrap), and an interval that holds the bound is a tie, not a
miss.

Every table is checked: an unknown key is an error that names it.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasmlcn._toml import check_keys, read_toml
from nasmlcn.errors import ReproduceError, nested
from nasmlcn.registry import did_you_mean
from nasmlcn.reproduce._papers import PAPERS

SCALES = ("smoke", "reduced", "full")
"""Smoke: minutes, checks the plumbing. Reduced: within an hour on a 2-core machine.
Full: the paper's own setting, meant for GPUs."""

SEARCH_ENGINE = "search"
CHECKS = ("close", "at_least", "at_most", "none")
"""``close``: |ours - target| <= tolerance; ``at_least``: ours >= target - tolerance;
``at_most``: ours <= target + tolerance; ``none``: shown beside the paper's, not
checked (a figure of other hardware, such as seconds per epoch on a P100). The
target is ``bound`` if given, else ``paper``."""

_REPRODUCE_KEYS = ("paper", "result", "measures", "setting", "engine", "scales", "compare")
_SCALE_KEYS = (
    "args",
    "runs",
    "minutes_here",
    "minutes_gpu",
    "measured",
    "gpu_measured",
    "differs",
)
_COMPARE_KEYS = (
    "label",
    "ours",
    "unit",
    "factor",
    "paper",
    "bound",
    "check",
    "tolerance",
    "source",
    "quote",
    "plot_only",
    "dataset",
    "scales",
    "samples",
    "statistic",
)
STATISTICS = ("mean", "max")
"""What a comparison's ``samples`` are compared by: Welch's t interval of the means,
or a bootstrap interval of the maxima (the best model of each set)."""
_ENGINE_NAME = re.compile(r"[a-z][a-z0-9_]*")
_RUN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")
_PLACEHOLDER = re.compile(r"\{([a-z_]*)\}")
PLACEHOLDERS = ("out",)
"""What an engine argument may name: ``{out}`` is the run's folder."""


@dataclass(frozen=True)
class Scale:
    """How one scale runs the engine, and what it costs.

    Either ``args`` (one run: its output is the engine's JSON) or ``runs`` (several
    runs by name, such as one per batch size: the output is ``{"runs": {name:
    output}}``, and a second invocation reruns only the runs that did not finish)."""

    args: tuple[str, ...]
    minutes_here: float
    minutes_gpu: float
    measured: bool
    differs: str
    runs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    gpu_measured: bool = False

    def engine_runs(self, out: Path) -> dict[str, list[str]]:
        """Each run's engine arguments with ``{out}`` filled in (one run, named
        ``""``, when the scale gives ``args``)."""
        named = self.runs or {"": self.args}
        return {k: [a.replace("{out}", str(out)) for a in v] for k, v in named.items()}


@dataclass(frozen=True)
class Comparison:
    """One of the paper's numbers (or claims) and where ours comes from."""

    label: str
    ours: str
    unit: str
    source: str
    factor: float = 1.0
    paper: float | None = None
    bound: float | None = None
    check: str | None = None
    tolerance: float = 0.0
    quote: str = ""
    plot_only: str = ""
    dataset: str = "Fashion-MNIST"
    scales: tuple[str, ...] = SCALES
    samples: tuple[str, str] | None = None
    """Paths to two lists of numbers whose ``statistic``'s difference ``ours`` is: the
    check then uses its 95 % interval (see the module)."""
    statistic: str = "mean"

    @property
    def target(self) -> float | None:
        """What ``check`` compares ours with: ``bound``, else the paper's value."""
        return self.bound if self.bound is not None else self.paper


@dataclass(frozen=True)
class Recipe:
    """A seed result nasmlcn reproduces."""

    name: str
    path: Path
    paper: str
    result: str
    measures: str
    setting: str
    engine: str
    scales: dict[str, Scale]
    compare: tuple[Comparison, ...]
    description: str = ""
    search_options: dict[str, Any] = field(default_factory=dict)

    @property
    def is_search(self) -> bool:
        return self.engine == SEARCH_ENGINE

    def scale(self, name: str) -> Scale:
        """The scale ``name``.

        Raises:
            ReproduceError: Not one of :data:`SCALES`, or the recipe lacks it.
        """
        if name not in SCALES:
            hint = did_you_mean(name, SCALES, otherwise="")
            raise ReproduceError(
                f"unknown scale {name!r}{'; ' + hint if hint else ''} (scales: {', '.join(SCALES)})"
            )
        return self.scales[name]


def _text(table: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = table.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise ReproduceError(f"{where}: {key} must be a non-empty string, got {value!r}")
    return value


def _number(
    table: Mapping[str, Any], key: str, where: str, *, default: float | None = None
) -> float | None:
    value = table.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ReproduceError(f"{where}: {key} must be a number, got {value!r}")
    return float(value)


def _minutes(table: Mapping[str, Any], key: str, where: str) -> float:
    value = _number(table, key, where)
    if value is None or value <= 0:
        raise ReproduceError(f"{where}: {key} must be a number of minutes > 0, got {value!r}")
    return value


def _args(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise ReproduceError(f"{where} must be a list of strings, got {value!r}")
    for arg in value:
        for name in _PLACEHOLDER.findall(arg):
            if name not in PLACEHOLDERS:
                raise ReproduceError(
                    f"{where}: unknown placeholder {{{name}}} in {arg!r}"
                    f" (known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)})"
                )
    return tuple(value)


def _scale(table: Any, where: str) -> Scale:
    if not isinstance(table, Mapping):
        raise ReproduceError(f"{where} must be a table")
    check_keys(table, _SCALE_KEYS, where, ReproduceError)
    if "args" in table and "runs" in table:
        raise ReproduceError(f"{where}: give args (one run) or runs (several), not both")
    args = _args(table.get("args", []), f"{where}: args")
    runs_table = table.get("runs", {})
    if not isinstance(runs_table, Mapping):
        raise ReproduceError(f"{where}: runs must be a table of name = [arguments]")
    runs = {}
    for key, value in runs_table.items():
        if not _RUN_NAME.fullmatch(key):
            raise ReproduceError(f"{where}: run name {key!r} must be letters, digits, '-' or '_'")
        runs[key] = _args(value, f"{where}: runs.{key}")
    flags = {}
    for key in ("measured", "gpu_measured"):
        flags[key] = table.get(key, False)
        if not isinstance(flags[key], bool):
            raise ReproduceError(f"{where}: {key} must be true or false, got {flags[key]!r}")
    return Scale(
        args=args,
        runs=runs,
        minutes_here=_minutes(table, "minutes_here", where),
        minutes_gpu=_minutes(table, "minutes_gpu", where),
        measured=flags["measured"],
        gpu_measured=flags["gpu_measured"],
        differs=_text(table, "differs", where),
    )


def _check(
    table: Mapping[str, Any], where: str, paper: float | None, bound: float | None
) -> str | None:
    """The entry's check (``None`` for ``"none"``), which needs a paper value or bound."""
    check = table.get("check", "close" if paper is not None else "none")
    if check not in CHECKS:
        raise ReproduceError(f"{where}: check must be one of {', '.join(CHECKS)}, got {check!r}")
    check = None if check == "none" else check
    if check is not None and paper is None and bound is None:
        raise ReproduceError(f"{where}: check {check!r} needs paper = ... or bound = ...")
    return check


def _expression(text: str, where: str) -> None:
    """Raises the parse error of the path or expression ``text``, prefixed by ``where``."""
    from nasmlcn.reproduce._values import parse_expression

    try:
        parse_expression(text)
    except ReproduceError as err:
        raise ReproduceError(f"{where}: {nested(err)}") from None


def _samples(
    table: Mapping[str, Any], where: str, check: str | None
) -> tuple[tuple[str, str] | None, str]:
    """The entry's two samples ``(A, B)`` (or ``None``) and the statistic taken of them."""
    samples = table.get("samples")
    if samples is None:
        if "statistic" in table:
            raise ReproduceError(f"{where}: statistic needs samples = [A, B] (what it is taken of)")
        return None, "mean"
    if (
        not isinstance(samples, list)
        or len(samples) != 2
        or not all(isinstance(x, str) and x.strip() for x in samples)
    ):
        raise ReproduceError(
            f"{where}: samples must be two paths [A, B] to lists of numbers"
            f" (ours = mean(A) - mean(B)), got {samples!r}"
        )
    if check not in ("at_least", "at_most"):
        raise ReproduceError(
            f'{where}: samples need check = "at_least" or "at_most" (a claim about'
            f" a difference), got {table.get('check', 'close')!r}"
        )
    statistic = table.get("statistic", "mean")
    if statistic not in STATISTICS:
        raise ReproduceError(
            f"{where}: statistic must be one of {', '.join(STATISTICS)}, got {statistic!r}"
        )
    for path in samples:
        _expression(path, f"{where}: samples")
    return (samples[0], samples[1]), statistic


def _comparison_scales(table: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """The scales that measure the entry's figure (default: all of them)."""
    scales = table.get("scales", list(SCALES))
    if not isinstance(scales, list) or not scales or any(x not in SCALES for x in scales):
        raise ReproduceError(
            f"{where}: scales must list some of {', '.join(SCALES)} (the scales that measure"
            f" this figure), got {scales!r}"
        )
    return tuple(scales)


def _comparison(table: Any, where: str) -> Comparison:
    """One ``[[reproduce.compare]]`` entry, checked."""
    if not isinstance(table, Mapping):
        raise ReproduceError(f"{where} must be a table")
    check_keys(table, _COMPARE_KEYS, where, ReproduceError)
    paper = _number(table, "paper", where)
    bound = _number(table, "bound", where)
    plot_only = _text(table, "plot_only", where, required=False)
    if paper is None and not plot_only:
        raise ReproduceError(
            f"{where}: give the paper's value (paper = ...) or say what its plot shows"
            ' (plot_only = "...")'
        )
    check = _check(table, where, paper, bound)
    tolerance = _number(table, "tolerance", where, default=0.0)
    if tolerance is None or tolerance < 0:
        raise ReproduceError(f"{where}: tolerance must be >= 0, got {tolerance!r}")
    factor = _number(table, "factor", where, default=1.0)
    if not factor:
        raise ReproduceError(f"{where}: factor must be a non-zero number, got {factor!r}")
    ours = _text(table, "ours", where)
    _expression(ours, where)
    samples, statistic = _samples(table, where, check)
    return Comparison(
        scales=_comparison_scales(table, where),
        label=_text(table, "label", where),
        ours=ours,
        unit=_text(table, "unit", where, required=False),
        source=_text(table, "source", where),
        factor=factor,
        paper=paper,
        bound=bound,
        check=check,
        tolerance=tolerance,
        quote=_text(table, "quote", where, required=False),
        plot_only=plot_only,
        dataset=_text(table, "dataset", where, required=False) or "Fashion-MNIST",
        samples=samples,
        statistic=statistic,
    )


def recipe_from_mapping(data: Mapping[str, Any], path: Path) -> Recipe:
    """The recipe in a parsed ``studies/*.toml`` (``path`` names it in messages).

    Raises:
        ReproduceError: No ``[reproduce]`` table, or an invalid or unknown key in it;
            a search recipe whose search options do not load.
    """
    where = f"recipe {str(path)!r}"
    table = data.get("reproduce")
    if not isinstance(table, Mapping):
        raise ReproduceError(f"{where} has no [reproduce] table: it is not a seed result")
    check_keys(table, _REPRODUCE_KEYS, where, ReproduceError, inside="[reproduce]")
    inner = f"{where} [reproduce]"
    paper = _text(table, "paper", inner)
    if paper not in PAPERS:
        raise ReproduceError(f"{inner}: unknown paper {paper!r} (known: {', '.join(PAPERS)})")
    engine = _text(table, "engine", inner)
    if not _ENGINE_NAME.fullmatch(engine):
        raise ReproduceError(
            f'{inner}: engine must be "search" or a module name in nasmlcn.reproduce.engines'
            f' (such as "thesis_table"), got {engine!r}'
        )
    scales_table = table.get("scales")
    if not isinstance(scales_table, Mapping):
        raise ReproduceError(f"{inner}: needs [reproduce.scales.smoke], .reduced and .full")
    check_keys(scales_table, SCALES, where, ReproduceError, inside="[reproduce.scales]")
    missing = [s for s in SCALES if s not in scales_table]
    if missing:
        raise ReproduceError(f"{inner}: missing [reproduce.scales.{missing[0]}]")
    scales = {s: _scale(scales_table[s], f"{where} [reproduce.scales.{s}]") for s in SCALES}
    if engine == SEARCH_ENGINE and any(sc.runs for sc in scales.values()):
        raise ReproduceError(f"{inner}: a search recipe sweeps with [sweep], not with runs")
    entries = table.get("compare")
    if not isinstance(entries, list) or not entries:
        raise ReproduceError(
            f"{inner}: needs at least one [[reproduce.compare]] entry (the paper's numbers)"
        )
    compare = tuple(
        _comparison(e, f"{where} [[reproduce.compare]] #{i + 1}") for i, e in enumerate(entries)
    )
    options: dict[str, Any] = {}
    search_keys = [k for k in data if k not in ("reproduce", "description", "schema_version")]
    if engine == SEARCH_ENGINE:
        from nasmlcn.search import load_search_recipe

        options, _, _ = load_search_recipe(path)
    elif search_keys:
        raise ReproduceError(
            f"{where}: {search_keys[0]!r} is a search option, but engine is {engine!r}"
            ' (search options belong to engine = "search" recipes)'
        )
    return Recipe(
        name=path.stem,
        path=path,
        paper=paper,
        result=_text(table, "result", inner),
        measures=_text(table, "measures", inner),
        setting=_text(table, "setting", inner),
        engine=engine,
        scales=scales,
        compare=compare,
        description=str(data.get("description", "")),
        search_options=options,
    )


def load_recipe(path: str | os.PathLike[str]) -> Recipe:
    """Reads one reproduction recipe.

    Raises:
        ReproduceError: Missing, unreadable or invalid file (the message names it).
    """
    p = Path(path)
    return recipe_from_mapping(read_toml(p, "recipe", ReproduceError), p)
