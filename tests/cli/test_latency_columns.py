"""Figures for different devices kept apart, each device named,
a measured figure given with its spread.

One real trained trial (the ``train`` evaluator on the synthetic dataset, on
this CPU, target devices 2xK80), then every report a user reads: the search's
summary, ``best`` (text and JSON), the dashboard report, the trial note and the
CSV. The predicted figures must name the target pool; the measured inference
latency must sit apart from them, name the machine it was measured on and give
its interquartile range over the timed passes.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
from pathlib import Path

import pytest

from nasmlcn.dashboard import common_device, format_measured, metric_heading
from nasmlcn.measure import InferenceTiming, time_inference
from nasmlcn.study import load_existing_study, trial_id_of
from tests.conftest import run_cli

SPREAD = re.compile(r"\d[\d.]* ms \(IQR [\d.]+-[\d.]+ ms\)")
"""A measured latency with its interquartile range: ``7.55 ms (IQR 1.27-34.4 ms)``."""


class _Searched:
    def __init__(self, db: Path, result: subprocess.CompletedProcess[str]) -> None:
        self.db = db
        self.storage = f"sqlite:///{db}"
        self.result = result


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> _Searched:
    db = tmp_path_factory.mktemp("latency") / "s.db"
    result = run_cli(
        "search", "--evaluator", "train", "--dataset", "synthetic", "--epochs", "1",
        "--train-limit", "200", "--batch-size", "10", "--val-limit", "8", "--trials", "1",
        "--run-on", "cpu", "--devices", "2xK80", "--mem", "12GB", "--flops", "0.25x",
        "--objectives", "accuracy,inference,latency", "--quiet", "--storage", f"sqlite:///{db}",
        env={"COLUMNS": "250"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return _Searched(db, result)


def _section(text: str, start: str, end: str | None = None) -> str:
    """The lines of ``text`` from the one containing ``start`` up to (not
    including) the one containing ``end``."""
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if start in line)
    last = next(
        (i for i in range(first + 1, len(lines)) if end is not None and end in lines[i]),
        len(lines),
    )
    return "\n".join(lines[first:last])


def test_the_spread_is_recorded_with_the_measured_figure(searched: _Searched) -> None:
    (trial,) = load_existing_study(None, searched.storage).trials
    training = trial.user_attrs["training"]
    median = training["measured_inference_latency_s"]
    low, high = training["measured_inference_p25_s"], training["measured_inference_p75_s"]
    assert 0 < low <= median <= high
    timing = training["extra"]["measured_inference"]
    assert timing["p25_seconds_per_image"] == low
    assert timing["p75_seconds_per_image"] == high


def test_search_summary_keeps_predicted_and_measured_apart(searched: _Searched) -> None:
    out = searched.result.stdout
    assert "proxy evaluator" not in out  # trained for real: no stand-in note
    predicted = _section(out, "Pareto front of", "measured where trained")
    measured = _section(out, "measured where trained, not on 2xK80", "pruning")
    # the predicted figures: the pool named once, above their table; none of them is
    # a measurement; an objective's figure is shown once, in its own column, in ms
    assert out.count("predicted on 2xK80") == 1
    assert out.index("predicted on 2xK80") < out.index("Pareto front of")
    heading = predicted.split("────", 1)[0].split()
    assert heading.count("inference") == heading.count("latency") == 1
    assert heading.count("memory") == 1  # no objective here: shown beside
    assert "(ms)" in heading
    assert " ms " not in predicted.split("────", 1)[1]
    assert "cpu" not in predicted
    assert "IQR" not in predicted
    # the measured figure: its own table, its device, its spread
    assert "inference measured on cpu (median, IQR)" in measured
    assert SPREAD.search(measured), measured


def test_best_keeps_predicted_and_measured_apart(searched: _Searched) -> None:
    shown = run_cli("best", "--storage", searched.storage, env={"COLUMNS": "250"})
    assert shown.returncode == 0, shown.stderr
    predicted = _section(shown.stdout, "Pareto front of", "measured where trained")
    measured = _section(shown.stdout, "measured where trained, not on 2xK80", "inference:")
    assert shown.stdout.count("predicted on 2xK80") == 1
    heading = predicted.split("────", 1)[0].split()
    # objectives are not shown twice (the predicted columns beside them)
    assert heading.count("inference") == heading.count("latency") == 1
    assert heading.count("memory") == 1  # memory is no objective here
    assert "cpu" not in predicted
    assert "IQR" not in predicted
    assert "inference measured on cpu (median, IQR)" in measured
    assert SPREAD.search(measured), measured
    assert "interquartile range" in shown.stdout  # the footnote says what IQR is

    data = json.loads(run_cli("best", "--storage", searched.storage, "--json").stdout)
    (row,) = data["best"]
    # added keys; the old ones unchanged (machine_load: what else ran while timing)
    assert set(row["measured"]) - {"machine_load"} == {
        "measured_inference_latency_s",
        "measured_inference_device",
        "measured_inference_batch_size",
        "measured_inference_p25_s",
        "measured_inference_p75_s",
    }
    assert row["measured"]["measured_inference_device"] == "cpu"


def test_best_limits_the_measured_inference_latency_apart(searched: _Searched) -> None:
    # the measured table's figure is a limit of its own, named apart from the
    # predicted inference objective (it was refused as no objective of the study)
    (trial,) = load_existing_study(None, searched.storage).trials
    measured = trial.user_attrs["training"]["measured_inference_latency_s"]
    predicted = trial.user_attrs["predicted"]["inference_latency_s"]
    assert measured > predicted  # a CPU, not two K80s: a limit between tells them apart
    between = f"measured_inference={(measured + predicted) / 2 * 1e3:.6g}ms"
    kept = run_cli(
        "best", "--storage", searched.storage, "--max", f"inference={measured * 1e3:.6g}ms"
    )
    assert kept.returncode == 0, kept.stderr
    assert "no completed feasible trial meets" not in kept.stdout
    left = run_cli("best", "--storage", searched.storage, "--max", between, "--json")
    assert left.returncode == 0, left.stderr
    assert json.loads(left.stdout)["best"] == []
    said = run_cli("best", "--storage", searched.storage, "--max", between, env={"COLUMNS": "250"})
    assert (
        f"no completed feasible trial meets --max {between} (measured where trained); "
        "loosen the limits"
    ) in said.stdout


def test_dashboard_report_note_and_csv_name_the_devices(
    searched: _Searched, tmp_path: Path
) -> None:
    import optuna
    import optuna_dashboard

    from nasmlcn.dashboard import export_study

    study = load_existing_study(None, searched.storage)
    export_study(study, tmp_path, ("html", "csv"))
    page = (tmp_path / "report.html").read_text()
    best = page[
        page.index('<section id="best">') : page.index("</section>", page.index('id="best"'))
    ]
    # three heading groups: the trial, predicted on the pool, measured on this CPU
    # inference_latency_s, latency_s, peak memory, imbalance, inference per image
    assert '<th colspan="5" class="group">predicted on 2xK80</th>' in best
    assert '<th colspan="1" class="group">measured on cpu</th>' in best
    assert SPREAD.search(best), best

    (row,) = csv.DictReader((tmp_path / "trials.csv").open())
    assert row["predicted:devices"] == "2xK80"
    assert row["training:measured_inference_device"] == "cpu"
    assert float(row["training:measured_inference_p25_s"]) <= float(
        row["training:measured_inference_p75_s"]
    )

    # the note the search stored for the dashboard (nasmlcn search writes one per trial)
    assert study.metric_names == ["accuracy", "inference_latency_s", "latency_s"]
    note = optuna_dashboard.get_note(optuna.trial.Trial(study, trial_id_of(study.trials[0])))
    assert "on the devices below" in note  # the placement's predictions
    measured = next(line for line in note.splitlines() if line.startswith("measured on cpu"))
    assert "(where it trained)" in measured
    assert SPREAD.search(measured), measured


def test_labels() -> None:
    assert metric_heading("latency_s", "8xK80") == "latency_s (predicted on 8xK80)"
    assert metric_heading("accuracy", "8xK80") == "accuracy"  # not a prediction
    assert metric_heading("params", "8xK80") == "params"  # the same on any device
    measured = {
        "measured_inference_latency_s": 2.54e-3,
        "measured_inference_p25_s": 2.41e-3,
        "measured_inference_p75_s": 2.7e-3,
        "measured_inference_device": "cpu",
    }
    assert format_measured(measured) == "2.54 ms (IQR 2.41-2.7 ms) on cpu"
    assert format_measured(measured, device=False) == "2.54 ms (IQR 2.41-2.7 ms)"
    # a record from before the spread was kept: the median alone
    old = {"measured_inference_latency_s": 2.54e-3, "measured_inference_device": "cpu"}
    assert format_measured(old) == "2.54 ms on cpu"
    assert format_measured({}) == "-"
    assert common_device([measured, old]) == "cpu"
    assert common_device([measured, {**old, "measured_inference_device": "cuda:0"}]) is None


def test_time_inference_quartiles_bracket_the_median() -> None:
    import torch

    from nasmlcn.models import build_model
    from nasmlcn.specs import MLCNSpec

    model = build_model(MLCNSpec.from_lanes("mlcn2:1x1"))
    timing: InferenceTiming = time_inference(
        model, torch.rand(4, 1, 28, 28), input_device="cpu", passes=7, warmup=1
    )
    assert timing.p25_seconds_per_image is not None
    assert timing.p75_seconds_per_image is not None
    assert 0 < timing.p25_seconds_per_image <= timing.seconds_per_image
    assert timing.seconds_per_image <= timing.p75_seconds_per_image
    assert timing.to_dict()["p75_seconds_per_image"] == timing.p75_seconds_per_image
