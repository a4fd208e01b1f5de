"""Extraction: plain data from a study, without plotly."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest

from nasmlcn.dashboard import (
    HYPERVOLUME_MARGIN,
    StudyData,
    TrialRow,
    best_rows,
    build_figures,
    extract_report,
    extract_study,
    hypervolume_history,
    optimization_histories,
    pareto_mask,
    placement,
    trial_records,
    trial_table,
)
from nasmlcn.search import epoch_correlations, is_feasible
from tests.dashboard.conftest import Made


def _row(
    number: int, values: tuple[float, ...] | None, feasible: bool = True, **kw: Any
) -> TrialRow:
    fields: dict[str, Any] = {
        "number": number,
        "state": "COMPLETE" if values is not None else "FAIL",
        "values": values,
        "feasible": feasible,
        "pareto": False,
        "constraints": {},
        "params": {},
        "lanes": None,
        "lane_mix": None,
        "num_lanes": None,
        "latency": None,
        "time_unit": "s",
        "peak_memory_bytes": None,
        "model_params": None,
        "imbalance": None,
        "accuracy_per_epoch": (),
        "generation": None,
        "reason": None,
        "datetime_start": None,
        "datetime_complete": None,
        "duration_s": None,
        "attrs": {},
    }
    fields.update(kw)
    return TrialRow(**fields)


def _study(rows: list[TrialRow], directions: tuple[str, ...]) -> StudyData:
    names = tuple(f"o{i}" for i in range(len(directions)))
    return StudyData("s", names, directions, {}, tuple(rows))


def test_pareto_mask_directions_and_ties() -> None:
    points = [(1.0, 1.0), (2.0, 2.0), (0.5, 3.0)]
    # both minimised: (1, 1) dominates (2, 2); (0.5, 3) trades off against it
    assert pareto_mask(points, ["minimize", "minimize"]) == [True, False, True]
    # first maximised: (1, 1) and (2, 2) trade off; both dominate (0.5, 3)
    assert pareto_mask(points, ["maximize", "minimize"]) == [True, True, False]
    # equal points do not dominate each other
    assert pareto_mask([(1.0, 1.0), (1.0, 1.0), (2.0, 0.0)], ["minimize"] * 2) == [True] * 3
    assert pareto_mask([], ["minimize"]) == []


def test_hypervolume_history_by_hand() -> None:
    # Scaled to [0, 1] by the feasible points (all of A, B, C already span it);
    # reference (1.1, 1.1). A: 1.1 * 0.1 = 0.11; + B: 0.21; + C (box 0.6 x 0.6):
    # 0.21 + 0.36 - 0.06 - 0.06 + 0.01 = 0.46. Infeasible D and dominated E change nothing.
    rows = [
        _row(0, (0.0, 1.0)),
        _row(1, (1.0, 0.0)),
        _row(2, (0.0, 0.0), feasible=False),
        _row(3, (0.5, 0.5)),
        _row(4, (0.9, 0.9)),
        _row(5, None),
    ]
    hv = hypervolume_history(_study(rows, ("minimize", "minimize")))
    assert hv is not None
    assert hv.numbers == (0, 1, 2, 3, 4)  # completed trials only
    assert hv.values == pytest.approx((0.11, 0.21, 0.21, 0.46, 0.46))
    assert hv.reference_point == pytest.approx((1 + HYPERVOLUME_MARGIN,) * 2)
    # maximising a negated objective is the same problem
    flipped = [r._replace(values=(-r.values[0], r.values[1])) if r.values else r for r in rows]
    hv2 = hypervolume_history(_study(flipped, ("maximize", "minimize")))
    assert hv2 is not None
    assert hv2.values == pytest.approx(hv.values)
    assert hv2.reference_point == pytest.approx((-1.1, 1.1))
    assert hypervolume_history(_study(rows[:1], ("minimize",))) is None  # single objective


def test_optimization_history_counts_feasible_trials_only() -> None:
    rows = [_row(0, (0.5,)), _row(1, (0.9,), feasible=False), _row(2, (0.7,)), _row(3, (0.6,))]
    (h,) = optimization_histories(_study(rows, ("maximize",)))
    assert h.numbers == (0, 1, 2, 3)
    assert h.feasible == (True, False, True, True)
    assert h.best_so_far == (0.5, 0.5, 0.7, 0.7)


def test_extraction_on_a_proxy_study(pareto_study: Made) -> None:
    study = pareto_study.load()
    data = extract_study(study)
    trials = study.get_trials(deepcopy=False)
    assert data.metric_names == ("accuracy", "latency_s", "memory_MiB")
    assert data.directions == ("maximize", "minimize", "minimize")
    assert data.accuracy_is_proxy
    assert data.info["evaluator"] == "proxy"
    assert [r.number for r in data.rows] == [t.number for t in trials]
    assert [r.feasible for r in data.rows] == [is_feasible(t) for t in trials]
    feasible = sum(r.feasible for r in data.rows)
    assert 0 < feasible < len(data.rows), "the fixture should have both kinds"
    # the front is Optuna's own (feasible) Pareto front, each model once: a repeat
    # (it took an earlier trial's result) is its original's point
    repeats = {r.number: r.repeat_of for r in data.rows if r.repeat_of is not None}
    optuna_front = {t.number for t in study.best_trials}
    assert {r.number for r in data.rows if r.pareto} == optuna_front - set(repeats)
    assert all(repeats[n] in optuna_front for n in optuna_front & set(repeats))
    by_number = {r.number: r for r in data.rows}
    for original in set(repeats.values()):
        assert by_number[original].proposed == 1 + list(repeats.values()).count(original)
    assert all("latency" in r.constraints and "memory" in r.constraints for r in data.rows)
    assert all(r.generation is not None for r in data.rows)  # NSGA-II generations
    row = data.rows[0]
    assert row.latency is not None
    assert row.peak_memory_bytes is not None
    assert len(row.accuracy_per_epoch) == 4
    assert row.lane_mix

    report = extract_report(study)
    assert [r.number for r in report.best] == [r.number for r in best_rows(data)]
    assert all(r.pareto for r in report.best)
    first = [r.values[0] for r in report.best if r.values]
    assert first == sorted(first, reverse=True)  # best accuracy first
    assert report.hypervolume is not None
    assert list(report.hypervolume.values) == sorted(report.hypervolume.values)  # never shrinks
    assert len(report.histories) == 3
    assert report.importances.skipped is None
    assert len(report.importances.values) == 3
    assert all(math.isclose(sum(v), 1.0, abs_tol=1e-6) for v in report.importances.values)
    curves = [list(t.user_attrs["training"]["val_accuracy_per_epoch"]) for t in trials]
    assert list(report.correlations) == epoch_correlations(curves)

    p = report.placements[0]
    best = report.best[0]
    assert len(p.devices) == 4
    assert p.number == best.number
    assert sum(len(d.lanes) for d in p.devices) == best.num_lanes
    assert sum(g.n_lanes for d in p.devices for g in d.groups) == best.num_lanes
    for d in p.devices:
        assert sum(g.time for g in d.groups) == pytest.approx(d.time, rel=1e-6)
        assert d.memory_limit_bytes == 12e9  # --mem 12GB


def test_single_objective_study(single_study: Made) -> None:
    report = extract_report(single_study.load())
    assert report.study.metric_names == ("accuracy",)
    assert report.hypervolume is None
    assert len(report.best) == 5
    best = [r.values[0] for r in report.best if r.values]
    assert best == sorted(best, reverse=True)
    assert sum(r.pareto for r in report.study.rows) >= 1


def test_trial_table_and_records(pareto_study: Made) -> None:
    data = extract_study(pareto_study.load())
    columns, rows = trial_table(data)
    assert len(rows) == len(data.rows)
    for column in (
        "number",
        "feasible",
        "pareto",
        "accuracy",
        "latency_s",
        "memory_MiB",
        "constraint:latency",
        "param:lane0",
        "lane_mix",
        "predicted:latency",
        "predicted:inference_latency_s",
        "training:accuracy",
        "training:measured_inference_latency_s",
        "accuracy_epoch_4",
    ):
        assert column in columns, column
    assert all(set(r) <= set(columns) for r in rows)
    assert all(r["predicted:inference_latency_s"] > 0 for r in rows if r["state"] == "COMPLETE")
    assert all(r["training:measured_inference_latency_s"] is None for r in rows)  # proxy
    records = trial_records(data)
    text = json.dumps(records, allow_nan=False)
    back = json.loads(text)
    assert back["metric_names"] == ["accuracy", "latency_s", "memory_MiB"]
    assert len(back["trials"]) == len(data.rows)
    trial = back["trials"][0]
    assert set(trial["values"]) == {"accuracy", "latency_s", "memory_MiB"}
    assert {"arch", "plan", "predicted", "training"} <= set(trial["user_attrs"])


def test_placement_of_a_trial_without_a_plan() -> None:
    assert placement(_row(0, None)) is None


def test_extraction_imports_no_plotly(pareto_study: Made) -> None:
    code = (
        "import sys, warnings; warnings.simplefilter('ignore')\n"
        "import nasmlcn, nasmlcn.search, nasmlcn.dashboard\n"
        "assert 'plotly' not in sys.modules, 'import'\n"
        "from nasmlcn.study._access import load_existing_study\n"
        f"study = load_existing_study({pareto_study.name!r}, {pareto_study.url!r}, "
        "read_only=False)\n"
        "nasmlcn.dashboard.extract_report(study)\n"
        "nasmlcn.dashboard.write_trial_note(study, 0)\n"
        "print('plotly' in sys.modules, 'torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_front_figure_counts_complete_trials_as_the_tables_do(pareto_study: Made) -> None:
    """The figure's count is the tables' (complete trials); a repeat, drawn as its
    original's point, is counted apart."""
    from optuna.trial import TrialState

    study = pareto_study.load()
    complete = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    fig = build_figures(extract_report(study), ["pareto_front"])["pareto_front"]
    assert f"{len(complete)} complete trials" in fig.layout.title.text
