"""``retrain --seeds`` (every model with the same seeds: means, 95 % t intervals and
the models tied with the best), ``best`` showing them, and ``best --pick lean`` (the
cheapest of the best and its ties): the answer's noise said, and the cheaper of
equals chosen. One run per model took the luckiest seed among equals."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from nasmlcn.search import RetrainOptions
from nasmlcn.study import load_existing_study, retrained_models, study_info
from tests.conftest import copy_sqlite, run_cli, small_search

TINY = ("--epochs", "1", "--train-limit", "60", "--test-limit", "40", "--inference-batch", "5")
WIDE = {"COLUMNS": "250"}


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real search of 3 learning models (seed 10), retrained with seeds 1, 2, 3."""
    folder = tmp_path_factory.mktemp("seeds")
    config = small_search(folder, trials=3, seed=10, objectives=("accuracy", "latency"))
    copy_sqlite(folder / "s.db", folder / "searched.db")  # before any retraining
    args = ("--storage", config.storage, "--top", "3", "--seeds", "3", *TINY)
    done = run_cli("retrain", *args, "--out", str(folder / "rt"), "--json")
    assert done.returncode == 0, done.stderr
    return {"storage": config.storage, "folder": folder, "report": json.loads(done.stdout)}


def _ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    return result


def test_every_model_trains_with_the_same_seeds_and_the_ties_match_scipy(
    seeded: dict[str, Any],
) -> None:
    report = seeded["report"]
    assert report["seeds"] == [1, 2, 3]
    assert sorted((m["number"], m["seed"]) for m in report["models"]) == sorted(
        (n, s) for n in {m["number"] for m in report["models"]} for s in (1, 2, 3)
    )
    standings = report["standings"]
    per_seed = {s["number"]: [s["per_seed"][k] for k in ("1", "2", "3")] for s in standings}
    best = standings[0]["number"]
    assert best == max(per_seed, key=lambda n: (np.mean(per_seed[n]), -n))
    for s in standings:
        values = np.asarray(per_seed[s["number"]])
        low, high = stats.t.interval(0.95, 2, loc=values.mean(), scale=stats.sem(values))
        if np.std(values) > 0:
            assert (s["low"], s["high"]) == pytest.approx((low, high))
        if s["number"] == best:
            continue
        diffs = values - np.asarray(per_seed[best])
        d_low, d_high = stats.t.interval(0.95, 2, loc=diffs.mean(), scale=stats.sem(diffs))
        margin = report["tie_margin"]
        expected = (
            "tied"
            if -margin <= d_low and d_high <= margin
            else "behind"
            if d_high < 0
            else "undecided"
        )
        assert s["mark"] == expected


def test_retrain_and_best_show_means_intervals_and_the_groups(seeded: dict[str, Any]) -> None:
    storage = seeded["storage"]
    shown = _ok(run_cli("best", "--storage", storage, env=WIDE)).stdout
    best = seeded["report"]["standings"][0]
    assert f"#{best['number']} retrained over 3 seeds: mean test acc {best['mean']:.4f}" in shown
    assert f"tied with the best (#{best['number']}):" in shown
    rows = json.loads(_ok(run_cli("best", "--storage", storage, "--json")).stdout)
    assert rows["seeded"]["standings"][0]["number"] == best["number"]
    assert rows["seeded"]["tie_margin"] == 0.005


def test_lean_picks_the_cheapest_of_the_best_and_its_ties(
    seeded: dict[str, Any], tmp_path: Path
) -> None:
    storage = seeded["storage"]
    # a margin of nearly 1: every model with an interval is tied with the best
    wide = ("--pick", "lean", "--prefer", "params", "--tie-margin", "0.999", "--json")
    picked = json.loads(_ok(run_cli("best", "--storage", storage, *wide)).stdout)
    lean = picked["lean"]
    params = {r["number"]: r["predicted"]["params"] for r in picked["best"]}
    study = load_existing_study("s", storage)
    params |= {t.number: t.user_attrs["predicted"]["params"] for t in study.trials if t.values}
    tied = [s["number"] for s in picked["seeded"]["standings"] if s["mark"] in ("best", "tied")]
    assert sorted(lean["among"]) == sorted(tied)
    assert lean["number"] == min(tied, key=lambda n: params[n])
    assert picked["picked"] == lean["number"]
    assert lean["cost"] == params[lean["number"]]
    # the default margin and figure: the picked one is the best or tied with it, and
    # the line says by what and against whom
    said = _ok(run_cli("best", "--storage", storage, "--pick", "lean", env=WIDE)).stdout
    assert "picked: trial " in said
    assert "(lean: the cheapest by predicted whole training step: lanes and head" in said
    arch = tmp_path / "lean.json"
    _ok(run_cli("best", "--storage", storage, *wide[:-1], "--export-arch", str(arch)))
    assert json.loads(arch.read_text())  # the lean model's architecture


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("retrain", "--top", "2", "--seeds", "0"), "--seeds '0': give a count >= 1"),
        (("retrain", "--top", "2", "--seeds", "1,1"), "seed 1 is given twice in --seeds 1,1"),
        (("retrain", "--top", "2", "--seeds", "1,x"), "--seeds '1,x': 'x' is not a seed"),
        (("retrain", "--top", "2", "--seeds", "2", "--seed", "4"), "give --seed 4 or --seeds"),
        (("best", "--prefer", "params"), "for --pick lean; add --pick lean"),
        (("best", "--pick", "lean", "--prefer", "energy"), "--prefer energy"),
        (("best", "--pick", "lean", "--prefer", "speed"), "is no figure of best's table"),
    ],
)
def test_bad_seeds_and_picks_are_refused_in_one_line_and_store_nothing(
    seeded: dict[str, Any], args: tuple[str, ...], message: str, tmp_path: Path
) -> None:
    storage = seeded["storage"]
    before = len(retrained_models(study_info(load_existing_study("s", storage))))
    done = run_cli(*args, "--storage", storage, *(TINY if args[0] == "retrain" else ()))
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr
    assert len(retrained_models(study_info(load_existing_study("s", storage)))) == before


def test_lean_without_evidence_or_with_one_model_is_refused(
    seeded: dict[str, Any], tmp_path: Path
) -> None:
    # the search alone, before any retraining: one run each and no replicate
    searched = f"sqlite:///{seeded['folder'] / 'searched.db'}"
    bare = run_cli("best", "--storage", searched, "--pick", "lean")
    assert bare.returncode == 2
    assert "--pick lean needs evidence" in bare.stderr
    one = small_search(tmp_path, trials=1, seed=10, objectives=("accuracy", "latency"))
    single = run_cli("best", "--storage", one.storage, "--pick", "lean")
    assert single.returncode == 2
    assert "has 1 model(s) to choose from" in single.stderr


def test_seeds_beside_refit_refit_every_seed() -> None:
    runs = RetrainOptions(top=2, seeds=(4, 5), refit=True).runs()
    assert [(r.seed, r.refit, r.seeds) for r in runs] == [(4, True, ()), (5, True, ())]


def test_lean_without_retrained_seeds_uses_the_search_s_noise_and_says_so(
    tmp_path: Path,
) -> None:
    config = small_search(
        tmp_path, trials=4, seed=10, objectives=("accuracy", "latency"), replicate_after=2
    )
    picked = json.loads(
        _ok(run_cli("best", "--storage", config.storage, "--pick", "lean", "--json")).stdout
    )
    lean = picked["lean"]
    assert "within the search's noise of the best's one run" in lean["evidence"]
    assert "weaker evidence than retrained seeds" in lean["evidence"]
    assert lean["number"] in lean["among"]
    assert lean["best"] in lean["among"]
    assert picked["seeded"] is None
