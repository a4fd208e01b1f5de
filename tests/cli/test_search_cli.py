"""``nasmlcn search``, ``best`` and ``correlate``, run as a user would (the first
search in a fresh ``python -m nasmlcn`` process, the others in this one)."""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nasmlcn.specs import MLCNSpec, load_arch
from nasmlcn.study import load_existing_study, study_info
from tests.conftest import ROOT, copy_sqlite, run_cli, run_cli_subprocess


def _search(
    db: Path, *args: str, run: Callable[..., subprocess.CompletedProcess[str]] = run_cli
) -> subprocess.CompletedProcess[str]:
    return run(
        "search",
        "--evaluator",
        "proxy",
        "--devices",
        "2xK80",
        "--mem",
        "12GB",
        "--storage",
        f"sqlite:///{db}",
        *args,
    )


def test_search_json_best_and_correlate(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    result = _search(
        db,
        "--trials",
        "5",
        "--epochs",
        "3",
        "--objectives",
        "accuracy,latency",
        "--prune",
        "--prune-min-trials",
        "3",
        "--prune-threshold",
        "0.5",
        "--json",
        run=run_cli_subprocess,  # one real search end to end
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["storage"] == f"sqlite:///{db}"
    assert data["n_trials"] == 5
    assert data["config"]["prune"]
    assert data["config"]["prune_min_trials"] == 3
    assert data["study"].startswith("mlcn-buckets-2xK80-1x-accuracy-latency-proxy-")
    assert data["best"], "a Pareto front is never empty after complete trials"
    for row in data["best"]:
        assert set(row) >= {"number", "values", "lanes", "placement"}
        assert set(row["values"]) == {"accuracy", "latency_s"}
        MLCNSpec.from_lanes(row["lanes"])  # the compact syntax round-trips
        assert {d["name"] for d in row["placement"]} == {"K80:0", "K80:1"}
    assert "trial 4" in result.stderr  # progress on stderr

    arch = tmp_path / "best.json"
    best = run_cli("best", "--storage", f"sqlite:///{db}", "--export-arch", str(arch), "--json")
    assert best.returncode == 0, best.stderr
    assert json.loads(best.stdout)["study"] == data["study"]
    assert isinstance(load_arch(arch), MLCNSpec)

    corr = run_cli("correlate", "--storage", f"sqlite:///{db}", "--study", data["study"], "--json")
    assert corr.returncode == 0, corr.stderr
    table = json.loads(corr.stdout)
    completed = 5 - len(data["pruned"])
    assert [e["epoch"] for e in table["epochs"]] == [1, 2, 3]
    assert table["trials"] == completed
    assert table["epochs"][-1]["spearman"] == pytest.approx(1.0)


PRUNING = ("--trials", "12", "--epochs", "4", "--sampler", "random")


@pytest.fixture(scope="module")
def pruned(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """``search PRUNING --json -q`` run once into a fresh storage: the storage and what
    the command returned. A test that adds trials does so to a copy of it."""
    db = tmp_path_factory.mktemp("pruned") / "s.db"
    return db, _search(db, *PRUNING, "--json", "-q")


def test_search_prunes_by_default_and_reports_the_correlation(
    tmp_path: Path, pruned: tuple[Path, subprocess.CompletedProcess[str]]
) -> None:
    shared, result = pruned
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["config"]["prune"] is True
    assert data["pruned"], "12 trials of 4 epochs prune at least one under the default"
    assert min(p["number"] for p in data["pruned"]) >= data["config"]["prune_min_trials"]
    rows = data["correlation"]
    assert [r["epoch"] for r in rows] == [1, 2, 3, 4]
    assert all(set(r) == {"epoch", "trials", "pearson", "spearman", "prunes"} for r in rows)
    assert rows[0]["trials"] == data["completed"] == 12 - len(data["pruned"])
    assert rows[-1]["spearman"] == pytest.approx(1.0)
    assert rows[-1]["prunes"] is False
    assert any(r["prunes"] for r in rows)
    assert data["seconds_saved_by_pruning"] == pytest.approx(
        sum(p["seconds_saved"] for p in data["pruned"])
    )
    # the text summary of the same study (two trials more, in a copy of it)
    db = copy_sqlite(shared, tmp_path / "s.db")
    text = _search(db, "--trials", "14", *PRUNING[2:])
    assert text.returncode == 0, text.stderr
    assert "early-epoch correlation" in text.stdout
    assert "Spearman rho" in text.stdout
    assert "pruning on: an epoch prunes once 5 trials have completed" in text.stdout
    assert "trial(s) saved about" in text.stdout


def test_the_summary_describes_successive_halving_under_it(tmp_path: Path) -> None:
    args = ("--trials", "8", "--epochs", "3", "--pruner", "halving", "--prune-min-trials", "2")
    text = _search(tmp_path / "s.db", *args)
    assert text.returncode == 0, text.stderr
    assert "pruning on: successive halving, rungs at epochs 1, 3, 9" in text.stdout
    assert "best 1/3 go on" in text.stdout
    assert "an epoch prunes once" not in text.stdout  # the correlation rule's words


def test_a_latency_budget_that_excludes_every_model_says_so(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    result = _search(db, "--trials", "3", "--latency-budget", "1e-9s")
    assert result.returncode == 0, result.stderr
    assert "none of the 3 completed trials meets --latency-budget 1e-06 ms" in result.stdout
    assert "no completed feasible trials yet" not in result.stdout
    best = run_cli("best", "--storage", f"sqlite:///{db}")
    assert best.returncode == 0, best.stderr
    assert "none of the 3 completed trials meets --latency-budget 1e-06 ms" in best.stdout
    # no empty table before that line, in either command
    for shown in (result.stdout, best.stdout):
        assert "best trials of" not in shown
        assert "lane mix" not in shown


def test_objectives_are_shown_once_times_in_ms(tmp_path: Path) -> None:
    """A memory or latency objective is not shown again as a predicted column beside
    it, and a time objective is in ms as the other time columns."""
    db = tmp_path / "s.db"
    args = ("--trials", "3", "--objectives", "accuracy,latency,memory", "--sampler", "nsga2")
    result = _search(db, *args, run=functools.partial(run_cli, env={"COLUMNS": "250"}))
    assert result.returncode == 0, result.stderr
    best = run_cli("best", "--storage", f"sqlite:///{db}", env={"COLUMNS": "250"})
    for out in (result.stdout, best.stdout):
        assert out.count("predicted on 2xK80") == 1  # above the table, once
        table = out.split("Pareto front", 1)[1]
        heading = table.split("────", 1)[0].split()
        assert heading.count("latency") == heading.count("memory") == 1
        assert "(ms)" in heading
        assert "(MiB)" in heading
        assert " ms " not in table.split("────", 1)[1]


def test_a_rerun_lists_the_study_s_pruned_trials_as_its_counts_do(
    pruned: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    db, result = pruned
    first = json.loads(result.stdout)
    assert first["pruned"], "12 trials of 4 epochs prune at least one"
    again = json.loads(_search(db, *PRUNING, "--json", "-q").stdout)  # nothing left to run
    assert again["run_trials"] == 0
    assert len(again["pruned"]) == again["trial_counts"]["pruned"] == len(first["pruned"])
    assert again["seconds_saved_by_pruning"] == pytest.approx(first["seconds_saved_by_pruning"])


def test_no_prune_trains_every_trial_in_full(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    result = _search(db, *PRUNING, "--no-prune", "--json", "-q")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["config"]["prune"] is False
    assert data["pruned"] == []
    assert data["completed"] == 12
    assert data["seconds_saved_by_pruning"] == 0
    assert len(data["correlation"]) == 4
    assert not any(r["prunes"] for r in data["correlation"])
    text = _search(db, "--trials", "13", *PRUNING[2:], "--no-prune")
    assert text.returncode == 0, text.stderr
    assert "pruning off (--no-prune)" in text.stdout
    assert "Spearman rho" in text.stdout


def test_rerunning_the_same_command_continues(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = _search(db, "--trials", "2", "--epochs", "1", "--json", "-q")
    again = _search(db, "--trials", "4", "--epochs", "1", "--json", "-q")
    assert first.returncode == again.returncode == 0, again.stderr
    a, b = json.loads(first.stdout), json.loads(again.stdout)
    assert a["study"] == b["study"]
    assert b["n_trials"] == 4
    assert b["run_trials"] == 2
    # fewer --trials than the study holds: nothing runs, and the output says why
    fewer = _search(db, "--trials", "3", "--epochs", "1")
    assert fewer.returncode == 0, fewer.stderr
    assert (
        "nothing to run: the study has 4 results and --trials 3 asks for 3 in all; "
        "give --trials 7 for 3 more" in " ".join(fewer.stderr.split())
    )


def test_a_study_named_again_continues_with_its_own_settings(tmp_path: Path) -> None:
    # `search --study real1 --trials 6` was refused with the fields that differ from
    # the defaults: the user had to repeat every original option
    storage = f"sqlite:///{tmp_path / 's.db'}"
    made = run_cli(
        *("search", "--evaluator", "proxy", "--devices", "4xK80", "--epochs", "3"),
        *("--objectives", "accuracy,latency", "--sampler", "random", "--seed", "7"),
        *("--study", "real1", "--storage", storage, "--trials", "2", "-q"),
    )
    assert made.returncode == 0, made.stderr
    again = run_cli("search", "--study", "real1", "--storage", storage, "--trials", "4")
    assert again.returncode == 0, again.stderr
    first = again.stderr.strip().splitlines()[0]
    assert first.startswith("continuing study 'real1' (2 of 4 trials done) in ")
    assert "sampler random, evaluator proxy, objectives accuracy, latency_s" in first
    study = load_existing_study("real1", storage)
    assert len(study.trials) == 4
    stored = study_info(study)["config"]
    assert (stored["devices"], stored["epochs"], stored["seed"]) == ("4xK80", 3, 7)
    # an option given again must agree; one that may change between runs may
    other = run_cli("search", "--study", "real1", "--storage", storage, "--epochs", "5")
    assert other.returncode == 2
    assert "epochs 3 (now 5). Leave those options out" in other.stderr
    same = run_cli(
        *("search", "--study", "real1", "--storage", storage, "--epochs", "3"),
        *("--trials", "5", "--timeout", "600", "-q"),
    )
    assert same.returncode == 0, same.stderr
    # a key an older version stored and this one lacks does not stop the continuation
    import optuna

    writable = optuna.load_study(study_name="real1", storage=storage)
    info = dict(writable.user_attrs["nasmlcn"])
    writable.set_user_attr("nasmlcn", {**info, "config": {**info["config"], "gone": 1}})
    older = run_cli("search", "--study", "real1", "--storage", storage, "--trials", "6", "-q")
    assert older.returncode == 0, older.stderr
    # a name not in the storage is a new study, and the first line says so
    new = run_cli(
        "search", "--study", "real2", "--storage", storage, "--evaluator", "proxy", "--trials", "1"
    )
    assert new.returncode == 0, new.stderr
    # (on defaults: that line first, naming them)
    assert new.stderr.startswith("new study 'real2' on defaults: data fashion-mnist, devices")
    assert new.stderr.splitlines()[1].startswith("new study 'real2' (1 trial) in ")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--sampler", "tpee"), "did you mean 'tpe'"),
        (("--objectives", "accuracy,speed"), "unknown objective 'speed'"),
        (("--space", "mlcn-bucket"), "did you mean 'mlcn-buckets'"),
        (("--devices", "8xK8O"), "did you mean 'K80'"),
        (("--mem", "12XB"), "unknown unit 'XB'"),
        (("--flops", "4y"), "invalid --flops '4y'"),
        (("--evaluator", "trian"), "did you mean 'train'"),
        (("--dataset", "fashion"), "unknown dataset 'fashion'"),
        (("--config", "/nonexistent.toml"), "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_creates_no_study(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    db = tmp_path / "s.db"
    result = _search(db, "--trials", "1", *args)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert not db.exists()


def test_a_study_name_with_another_config_is_refused_and_left_intact(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert _search(db, "--study", "mine", "--trials", "2", "--epochs", "1", "-q").returncode == 0
    clash = _search(db, "--study", "mine", "--trials", "3", "--epochs", "2", "-q")
    assert clash.returncode != 0
    assert "another configuration: epochs 1 (now 2)" in clash.stderr
    best = json.loads(run_cli("best", "--storage", f"sqlite:///{db}", "--json").stdout)
    assert best["n_trials"] == 2


def test_unknown_study_and_storage_errors(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    _search(db, "--study", "mine", "--trials", "1", "--epochs", "1", "-q")
    missing = run_cli("best", "--storage", f"sqlite:///{db}", "--study", "mien")
    assert missing.returncode != 0
    assert "did you mean 'mine'" in missing.stderr
    nofile = run_cli("correlate", "--storage", f"sqlite:///{tmp_path / 'none.db'}")
    assert nofile.returncode != 0
    assert "no such database file" in nofile.stderr
    assert not (tmp_path / "none.db").exists()
    # run from another folder, the default storage is not there: say how to name it
    elsewhere = run_cli("best", cwd=tmp_path, env={"NASMLCN_STORAGE": ""})
    assert elsewhere.returncode != 0
    (line,) = elsewhere.stderr.strip().splitlines()
    assert f"(relative to {tmp_path})" in line
    assert line.endswith("name the study's with --storage or $NASMLCN_STORAGE")


def test_the_fig_6_2_recipe_sweeps_flops(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    result = run_cli(
        "search",
        "--config",
        str(ROOT / "studies" / "thesis-fig6.2.toml"),
        "--evaluator",
        "proxy",
        "--trials",
        "2",
        "--storage",
        f"sqlite:///{db}",
        "--json",
        "-q",
    )
    assert result.returncode == 0, result.stderr
    sweep = json.loads(result.stdout)["sweep"]
    assert [r["config"]["flops"] for r in sweep] == ["1x", "2x", "4x", "8x"]
    assert [r["study"] for r in sweep] == [
        f"thesis-fig6.2-flops-{f}" for f in ("1x", "2x", "4x", "8x")
    ]
    assert all(r["config"]["devices"] == "8xK80" and r["config"]["mem"] == "12GB" for r in sweep)
    assert not any(r["config"]["prune"] for r in sweep)  # Fig. 6.2 trains every model in full


def test_an_option_the_recipe_sweeps_is_refused_not_overwritten(tmp_path: Path) -> None:
    """``--flops 2x`` beside a recipe sweeping flops would have been dropped silently
    (each swept study takes the sweep's value): one line, no study made."""
    db = tmp_path / "s.db"
    recipe = str(ROOT / "studies" / "thesis-fig6.2.toml")
    result = run_cli(
        "search", "--config", recipe, "--evaluator", "proxy", "--flops", "2x",
        "--storage", f"sqlite:///{db}",
    )  # fmt: skip
    assert result.returncode != 0
    assert result.stderr.startswith("error: --flops 2x cannot be given with ")
    assert "sweeps flops over 1x, 2x, 4x, 8x" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not db.exists()


def test_inference_objective_in_a_proxy_search_and_best(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    result = _search(
        db, "--trials", "3", "--epochs", "1", "--objectives", "accuracy,inference", "--json"
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["metric_names"] == ["accuracy", "inference_latency_s"]
    assert data["directions"] == ["maximize", "minimize"]
    assert data["best"]
    for row in data["best"]:  # what best --json prints too (one summary of a trial)
        value = row["values"]["inference_latency_s"]
        assert value > 0
        assert row["predicted"]["inference_latency_s"] == value
        assert row["predicted"]["inference_batch_size"] == 1
        assert value < row["predicted"]["latency"]  # one image vs a training step
        assert row["measured"] == {}  # the proxy measures nothing and invents nothing
    shown = run_cli("best", "--storage", f"sqlite:///{db}", env={"COLUMNS": "250"})
    assert shown.returncode == 0, shown.stderr
    assert "predicted on 2xK80" in shown.stdout
    assert "inference measured: nothing" in shown.stdout  # the proxy measured nothing
    heading = shown.stdout.split("Pareto front", 1)[1].split("────", 1)[0].split()
    assert heading.count("inference") == 1  # the objective, not again beside it
    assert heading.count("latency") == 1  # no objective here: shown beside


def test_a_proxy_result_says_so_in_every_output(tmp_path: Path) -> None:
    """The summary, best (table and --json), and trials.csv name the proxy: its
    accuracies were never trained for."""
    import csv

    db = tmp_path / "s.db"
    text = _search(db, "--trials", "3", "-q")
    assert text.returncode == 0, text.stderr
    assert "proxy evaluator: these accuracies are an analytic stand-in" in text.stdout
    as_json = json.loads(_search(db, "--trials", "3", "--json", "-q").stdout)
    assert as_json["accuracy_is_proxy"] is True
    url = f"sqlite:///{db}"
    best = run_cli("best", "--storage", url)
    assert "proxy evaluator: these accuracies are an analytic stand-in" in best.stdout
    best_json = json.loads(run_cli("best", "--storage", url, "--json").stdout)
    assert best_json["accuracy_is_proxy"] is True
    assert best_json["evaluator"] == "proxy"
    exported = run_cli("export", "--storage", url, "--out", str(tmp_path / "r"), "--format", "csv")
    assert exported.returncode == 0, exported.stderr
    with (tmp_path / "r" / "trials.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows
    assert {row["evaluator"] for row in rows} == {"proxy"}


def test_a_one_epoch_study_s_correlation_says_one_epoch_cannot_tell(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    assert _search(db, "--trials", "4", "--epochs", "1", "-q").returncode == 0
    shown = run_cli("correlate", "--storage", f"sqlite:///{db}")
    assert shown.returncode == 0, shown.stderr
    assert "first epoch with Spearman" not in shown.stdout
    assert "one epoch per trial: its accuracy is the last" in " ".join(shown.stdout.split())
    data = json.loads(run_cli("correlate", "--storage", f"sqlite:///{db}", "--json").stdout)
    assert data["first_epoch_reaching_threshold"] is None


def test_the_last_epoch_is_never_reported_as_the_first_to_rank_alike(tmp_path: Path) -> None:
    # its rho against itself is 1: a two-epoch study said "first epoch ...: 2"
    db = tmp_path / "s.db"
    assert _search(db, "--trials", "4", "--epochs", "2", "-q").returncode == 0
    url = f"sqlite:///{db}"
    data = json.loads(run_cli("correlate", "--storage", url, "--threshold", "1", "--json").stdout)
    assert data["epochs"][-1]["spearman"] == 1
    assert data["first_epoch_reaching_threshold"] in (None, 1)
    shown = run_cli("correlate", "--storage", url, "--threshold", "1", env={"COLUMNS": "200"})
    assert "first epoch with Spearman rho >= 1: 2" not in shown.stdout
    if data["first_epoch_reaching_threshold"] is None:
        assert "no epoch before the last (2, whose rho is 1 by definition)" in shown.stdout


@pytest.mark.parametrize("name", ["a\tb", "a\nb"])
def test_a_study_name_with_a_control_character_is_refused(tmp_path: Path, name: str) -> None:
    db = tmp_path / "s.db"
    result = run_cli(
        *("search", "--evaluator", "proxy", "--trials", "1", "--study", name),
        *("--storage", f"sqlite:///{db}", "-q"),
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: study name {name!r} holds a control character")
    assert not db.exists()


@pytest.mark.parametrize("name", ["accuracy/random/seed-0", "..", "a\\b"])
def test_any_printable_study_name_runs_and_exports_inside_the_exports(
    tmp_path: Path, name: str
) -> None:
    # Optuna takes any name, and benchmarks/search_quality.py names its studies with '/'
    # (refused for a round, which also made such old studies impossible to continue);
    # the export folder maps the name to one a folder can take, inside the exports
    db = tmp_path / "s.db"
    common = ("--study", name, "--storage", f"sqlite:///{db}")
    search = ("search", "--evaluator", "proxy", "--trials", "1", *common, "-q")
    assert run_cli(*search, cwd=tmp_path).returncode == 0
    again = run_cli(*search[:4], "2", *search[5:], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    exported = run_cli("export", *common, "--format", "json", cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    exports = tmp_path / "dashboards" / "exports"
    (folder,) = exports.iterdir()
    assert (folder / "trials.json").exists()
    assert json.loads((folder / "trials.json").read_text())["study"] == name


def test_a_sweep_over_space_files_names_each_study_by_the_file(tmp_path: Path) -> None:
    spaces = tmp_path / "spaces"
    spaces.mkdir()
    for name in ("a", "b"):
        (spaces / f"{name}.toml").write_text(
            (ROOT / "search_spaces" / "mlcn-buckets.toml").read_text()
        )
    recipe = tmp_path / "r.toml"
    recipe.write_text(f'study = "s"\n[sweep]\nspace = ["{spaces}/a.toml", "{spaces}/b.toml"]\n')
    result = run_cli(
        *("search", "--config", str(recipe), "--evaluator", "proxy", "--trials", "1"),
        *("--storage", f"sqlite:///{tmp_path / 's.db'}", "--json", "-q"),
    )
    assert result.returncode == 0, result.stderr
    assert [r["study"] for r in json.loads(result.stdout)["sweep"]] == ["s-space-a", "s-space-b"]


def test_a_search_says_how_long_its_trials_will_take_before_the_first(tmp_path: Path) -> None:
    # the README's first command (10 epochs x 54,000 images a trial) started on a CPU
    # without a word on its hours
    storage = f"sqlite:///{tmp_path / 's.db'}"
    command = (
        *("search", "--dataset", "synthetic", "--devices", "1xK80", "--flops", "0.05x"),
        *("--epochs", "1", "--train-limit", "50", "--val-limit", "50", "--batch-size", "10"),
        *("--storage", storage, "--run-on", "cpu"),
    )
    shown = run_cli(*command, "--trials", "1", "--study", "a")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stderr.splitlines()
    (line,) = [x for x in lines if x.startswith("predicted: at most about ")]
    # 5 training steps in all: one model timed, not two
    assert "for the 1 trial left on cpu (from a timed step of one of the space's models" in line
    assert lines.index(line) < next(i for i, x in enumerate(lines) if x.startswith("trial 0"))
    data = json.loads(run_cli(*command, "--trials", "2", "--study", "a", "--json", "-q").stdout)
    forecast = data["forecast"]
    assert forecast["trials"] == 1  # the trials left
    assert forecast["source"] == "a timed step of one of the space's models"
    assert forecast["device"] == "cpu"
    assert forecast["upper_bound"] is True  # pruning is on
    assert 0 < forecast["step_seconds"] < forecast["trial_seconds"] == forecast["total_seconds"]
    longer = run_cli(*command, "--trials", "2", "--epochs", "2", "--study", "b", "--json", "-q")
    forecast = json.loads(longer.stdout)["forecast"]  # 2 trials of 2 epochs of 5 steps
    assert forecast["source"] == "timed steps of the space's models"  # two models timed
    assert forecast["total_seconds"] == pytest.approx(2 * forecast["trial_seconds"])
    proxy = run_cli(
        "search",
        "--evaluator",
        "proxy",
        "--trials",
        "1",
        "--storage",
        storage,
        "--study",
        "p",
        "--json",
        "-q",
    )
    assert json.loads(proxy.stdout)["forecast"] is None  # nothing trains


def test_a_calibration_of_this_machine_forecasts_without_timing(tmp_path: Path) -> None:
    """With a calibration of this host's CPU at the threads training has, for these
    images, the forecast takes each drawn model's step from its whole-model fit
    (here a flat 0.25 s a step) instead of timing; one measured with other threads
    is not used."""
    import socket

    import torch

    from nasmlcn.costs import CostContext, LaneSample, ModelSample, fit_calibration
    from nasmlcn.specs import parse_lane, parse_lanes

    def calibration(threads: int) -> Path:
        path = tmp_path / f"calibration-{threads}.json"
        fit_calibration(
            [
                LaneSample(parse_lane(x), 0.01 * (i + 1), 10**6)
                for i, x in enumerate(("mlcn1:1x1", "mlcn2:2x2"))
            ],
            CostContext(batch_size=10),
            device="cpu",
            speed=1.0,
            threads=threads,
            model_samples=[
                ModelSample(tuple(parse_lanes(m)), 0.25)
                for m in ("mlcn1:1x1", "3*mlcn2:2x2", "8*mlcn1:1x3")
            ],
            created="2026-11-30T10:00:00Z",
            hostname=socket.gethostname(),
        ).save(path)
        return path

    command = (
        *("search", "--dataset", "synthetic", "--devices", "1xK80", "--flops", "0.05x"),
        *("--epochs", "1", "--train-limit", "50", "--val-limit", "50", "--batch-size", "10"),
        *("--evaluator", "train", "--trials", "1", "--json", "-q"),
    )
    threads = torch.get_num_threads()
    done = run_cli(
        *command,
        "--storage",
        f"sqlite:///{tmp_path / 'a.db'}",
        env={"NASMLCN_CALIBRATION": str(calibration(threads))},
    )
    assert done.returncode == 0, done.stderr
    forecast = json.loads(done.stdout)["forecast"]
    assert forecast["source"] == "the calibration of 2026-11-30"
    assert forecast["step_seconds"] == pytest.approx(0.25, rel=1e-3)
    # 1 epoch of 5 steps, 50 validation images at a third of a step's time each
    per_epoch = 5 * 0.25 + 50 * (0.25 / 10) / 3
    assert forecast["trial_seconds"] == pytest.approx(per_epoch + 1.5, rel=1e-3)
    other = run_cli(
        *command,
        "--storage",
        f"sqlite:///{tmp_path / 'b.db'}",
        env={"NASMLCN_CALIBRATION": str(calibration(threads + 1))},
    )
    assert json.loads(other.stdout)["forecast"]["source"].startswith("a timed step of one")
