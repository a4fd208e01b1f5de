"""Our figures beside the paper's, and the one-line verdict of a result (pure)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from nasmlcn.errors import ReproduceError
from nasmlcn.reproduce._recipe import Comparison, Recipe, Scale
from nasmlcn.reproduce._values import evaluate, evaluate_samples

NEAR = 3.0
"""A ``close`` figure that misses its tolerance by no more than this many times it
still counts as "within" the paper (reported with its gap), not as a miss."""

VERDICTS = ("reproduced", "within", "tie", "not reproduced", "no paper number", "smoke")
"""``tie``: a claimed difference between two sets of models whose 95 % interval holds
the bound (neither shown nor refuted at this scale). ``smoke``: a smoke run measures
nothing, so it gets no verdict (its report still shows every figure, read from the
engine's output)."""


@dataclass(frozen=True)
class Row:
    """One figure: the paper's, ours, the gap and whether the check passed."""

    label: str
    unit: str
    dataset: str
    paper: float | None
    ours: float | None
    gap: float | None
    check: str | None
    target: float | None
    tolerance: float
    passed: bool | None
    source: str
    quote: str
    plot_only: str
    error: str = ""
    low: float | None = None
    """The 95 % interval of ``ours`` (a recipe's ``samples``), else None."""
    high: float | None = None
    tie: bool = False
    """The check's bound lies inside the interval: not passed, not missed."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Verdict:
    """A result's verdict: one of :data:`VERDICTS`, and the line that explains it."""

    kind: str
    line: str

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "line": self.line}


def gap_unit(unit: str) -> str:
    """The unit a difference is given in: points for percentages."""
    return "pt" if unit == "%" else unit


def with_unit(text: str, unit: str) -> str:
    """``1.20x``, ``3.00 pt``, ``0.99`` (no unit)."""
    if not unit:
        return text
    return f"{text}{unit}" if unit == "x" else f"{text} {unit}"


def fmt(value: float | None, unit: str = "") -> str:
    """A figure for tables and lines: ``8,573 KiB``, ``220.0 s``, ``91.30 %``,
    ``1.82 ms``, ``0.0017 s``."""
    if value is None:
        return "-"
    size = abs(value)
    if size >= 1000:
        text = f"{value:,.0f}"
    elif size >= 100:
        text = f"{value:.1f}"
    elif size >= 0.1 or size == 0:
        text = f"{value:.2f}"
    else:
        text = f"{value:.2g}"
    return with_unit(text, unit)


def _passes(check: str, value: float, target: float, tolerance: float) -> bool:
    if check == "close":
        return abs(value - target) <= tolerance + 1e-12
    if check == "at_least":
        return value >= target - tolerance - 1e-12
    return value <= target + tolerance + 1e-12


def _row(entry: Comparison, data: Any) -> Row:
    error = ""
    ours: float | None
    try:
        ours = evaluate(entry.ours, data) * entry.factor
    except ReproduceError as err:
        ours, error = None, str(err)
    target = entry.target
    passed: bool | None = None
    low = high = None
    if entry.samples is not None and ours is not None:
        try:
            low, high = _interval(entry, data)
        except (ReproduceError, ValueError) as err:
            error = f"no interval: {err}"
    tie = False
    if entry.check is not None and target is not None and low is not None and high is not None:
        # the interval's far end from the bound must pass; its near end passing is a tie
        far, near = (low, high) if entry.check == "at_least" else (high, low)
        passed = _passes(entry.check, far, target, entry.tolerance)
        tie = not passed and _passes(entry.check, near, target, entry.tolerance)
    elif entry.check is not None and target is not None and ours is not None:
        passed = _passes(entry.check, ours, target, entry.tolerance)
    elif entry.check is not None:
        passed = False
    gap = ours - entry.paper if ours is not None and entry.paper is not None else None
    return Row(
        label=entry.label,
        unit=entry.unit,
        dataset=entry.dataset,
        paper=entry.paper,
        ours=ours,
        gap=gap,
        check=entry.check,
        target=target,
        tolerance=entry.tolerance,
        passed=passed,
        source=entry.source,
        quote=entry.quote,
        plot_only=entry.plot_only,
        error=error,
        low=low,
        high=high,
        tie=tie,
    )


def _interval(entry: Comparison, data: Any) -> tuple[float, float]:
    """The 95 % interval of ``stat(A) - stat(B)`` for ``entry.samples``, times
    ``entry.factor``: Welch's t for means, a seeded percentile bootstrap for maxima."""
    from nasmlcn.stats import bootstrap_interval, welch_interval

    assert entry.samples is not None
    a, b = (evaluate_samples(path, data) for path in entry.samples)
    if entry.statistic == "mean":
        found = welch_interval(a, b)
    else:
        found = bootstrap_interval(a, b, entry.statistic)
    ends = found.low * entry.factor, found.high * entry.factor
    return min(ends), max(ends)


def compare(recipe: Recipe, data: Any, scale: str) -> list[Row]:
    """Every ``[[reproduce.compare]]`` entry of ``recipe`` that ``scale`` measures,
    against the engine output."""
    return [_row(entry, data) for entry in recipe.compare if scale in entry.scales]


def interval_text(row: Row) -> str:
    """`` (95 % interval -5.46 to 1.31 pt)`` for a row with one, else ``""``."""
    if row.low is None or row.high is None:
        return ""
    unit = gap_unit(row.unit)
    return f" (95 % interval {with_unit(f'{row.low:.2f} to {row.high:.2f}', unit)})"


def _miss(row: Row) -> str:
    target = fmt(row.target, row.unit)
    if row.ours is None:
        return f"{row.label}: no figure ({row.error})"
    ours = fmt(row.ours, row.unit) + interval_text(row)
    if row.check == "at_least":
        return f"{row.label} {ours}, the paper's claim needs >= {target}"
    if row.check == "at_most":
        return f"{row.label} {ours}, the paper's claim needs <= {target}"
    gap = row.ours - (row.target or 0.0)
    return f"{row.label} {ours} vs {target} ({with_unit(f'{gap:+.2f}', gap_unit(row.unit))})"


def verdict(rows: list[Row], scale: Scale, scale_name: str = "") -> Verdict:
    """The result's verdict: ``reproduced`` when every checked figure passes;
    ``within`` when only ``close`` figures miss, each by at most :data:`NEAR` times
    its tolerance (the line gives the largest gap); ``tie`` when the only figures
    that do not pass are differences whose interval holds the bound; else ``not
    reproduced``, with the misses and how this scale differs from the paper's setting
    (the likely why)."""
    checked = [r for r in rows if r.check is not None]
    if scale_name == "smoke":
        missing = [r for r in rows if r.ours is None]
        read = f"{len(rows) - len(missing)} of {len(rows)} figures read from the engine's output"
        return Verdict("smoke", f"smoke run, no verdict (it measures nothing): {read}")
    if not checked:
        return Verdict(
            "no paper number",
            "the paper gives a plot only: ours is shown beside its description",
        )
    ties = [r for r in checked if r.tie]
    misses = [r for r in checked if not r.passed and not r.tie]
    if not misses and not ties:
        return Verdict("reproduced", f"reproduced: {len(checked)} of {len(checked)} figures agree")
    if not misses:
        return Verdict(
            "tie",
            f"tie: {len(checked) - len(ties)} of {len(checked)} figures agree; "
            f"{'; '.join(_miss(r) for r in ties[:2])}"
            f"{f' (+{len(ties) - 2} more)' if len(ties) > 2 else ''}: the interval holds the"
            " bound, so this scale neither shows nor refutes the claim",
        )
    near = not ties and all(
        r.check == "close"
        and r.ours is not None
        and r.target is not None
        and abs(r.ours - r.target) <= NEAR * r.tolerance + 1e-12
        and r.tolerance > 0
        for r in misses
    )
    if near:
        worst = max(misses, key=lambda r: abs((r.ours or 0.0) - (r.target or 0.0)) / r.tolerance)
        size = abs((worst.ours or 0.0) - (worst.target or 0.0))
        return Verdict(
            "within",
            f"within {with_unit(f'{size:.2f}', gap_unit(worst.unit))}:"
            f" {len(checked) - len(misses)} of"
            f" {len(checked)} figures agree; {_miss(worst)}",
        )
    return Verdict(
        "not reproduced",
        f"not reproduced: {'; '.join(_miss(r) for r in misses[:2])}"
        f"{f' (+{len(misses) - 2} more)' if len(misses) > 2 else ''}; why: {scale.differs}",
    )
