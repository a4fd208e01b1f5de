"""``--warm-start STUDY``: seeds refit to other devices, trials as data, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from optuna.trial import TrialState

from nasmlcn.errors import SearchError
from nasmlcn.search import SearchConfig, run_search, setup_search
from nasmlcn.study import list_studies, load_existing_study
from tests._cli import run_cli
from tests.conftest import copy_sqlite


def _source(tmp_path: Path, **overrides: object) -> SearchConfig:
    config = SearchConfig(
        evaluator="proxy",
        sampler="random",
        trials=10,
        epochs=2,
        devices="2xK80",
        mem="12GB",
        flops="0.25x",
        prune=False,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        study="earlier",
    )
    return config.with_overrides(**overrides)


def _trials(config: SearchConfig, name: str) -> list:
    return load_existing_study(name, config.storage).get_trials(deepcopy=False)


@pytest.fixture(scope="module")
def _earlier_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The earlier study, searched once for the module (``_source``'s proxy search)."""
    folder = tmp_path_factory.mktemp("earlier")
    run_search(_source(folder))
    return folder / "s.db"


@pytest.fixture
def earlier(_earlier_db: Path, tmp_path: Path) -> SearchConfig:
    """``_source(tmp_path)`` as searched: a copy of the module's earlier study in
    ``tmp_path / 's.db'``, each test's own to add studies to."""
    copy_sqlite(_earlier_db, tmp_path / "s.db")
    return _source(tmp_path)


def test_another_device_pool_gets_the_best_architectures_refit_first(
    earlier: SearchConfig,
) -> None:
    best = sorted(
        (t for t in _trials(earlier, "earlier") if t.state == TrialState.COMPLETE),
        key=lambda t: -t.values[0],
    )[:3]

    def source_lanes(number: int) -> list:
        return _trials(earlier, "earlier")[number].user_attrs["arch"]["lanes"]

    config = earlier.with_overrides(
        study="bigger", devices="4xK80", warm_start="earlier", warm_start_top=3, trials=6
    )
    result = run_search(config)
    warm = result.warm_start
    assert warm is not None
    assert [s["trial"] for s in warm["seeds"]] == [t.number for t in best]
    assert warm["transferred"] == 0  # 4 devices build every earlier model differently
    assert warm["no_transfer"] == "the new devices build every earlier model differently"
    trials = _trials(config, "bigger")
    # seeds count toward --trials; nothing was added as data (repeats come on top)
    assert sum("repeat_of" not in t.user_attrs for t in trials) == 6
    for trial, source in zip(trials[:3], best, strict=True):
        assert trial.user_attrs["warm_start"]["trial"] == source.number
        assert trial.params == source.params  # the same palette: nothing to refit
        # ... built into the new devices' buckets: a model for 4 devices, not 2
        assert len(set(trial.user_attrs["plan"]["assignment"])) == 4
        assert trial.user_attrs["arch"] != source.user_attrs["arch"]
    # ... and the warm start says so: every seed rebuilt, its lanes before and after
    for seed, trial in zip(warm["seeds"], trials[:3], strict=True):
        assert seed["model"]["rebuilt"] is True
        assert seed["model"]["lanes_before"] == len(source_lanes(seed["trial"]))
        assert seed["model"]["lanes_after"] == len(trial.user_attrs["arch"]["lanes"])
    assert not any("warm_start" in t.user_attrs for t in trials[3:])
    assert result.trial_counts["results"] - result.trial_counts["repeats"] == 6


def test_lanes_the_new_devices_cannot_hold_are_refit_to_ones_they_can(tmp_path: Path) -> None:
    big = _source(tmp_path, flops="1x")
    run_search(big)
    config = big.with_overrides(study="small", flops="0.25x", warm_start="earlier", trials=5)
    warm = run_search(config).warm_start
    assert warm is not None
    refits = [r for s in warm["seeds"] for r in s["refits"]]
    assert any("does not fit these devices" in r for r in refits), refits
    space = setup_search(config).space.distributions()
    for trial in _trials(config, "small"):
        for name, value in trial.params.items():
            assert space[name]._contains(space[name].to_internal_repr(value)), (name, value)
    assert all(
        t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in _trials(config, "small")
    )


def test_a_lane_the_edited_space_excludes_is_blamed_on_the_space(
    earlier: SearchConfig, tmp_path: Path
) -> None:
    """Not on the devices, which hold it (a new user's finding)."""
    from tests.conftest import ROOT

    text = (ROOT / "search_spaces" / "mlcn-buckets.toml").read_text()
    edited = tmp_path / "mlcn1-only.toml"
    edited.write_text(text.replace('lane_types = ["mlcn1", "mlcn2"]', 'lane_types = ["mlcn1"]'))
    config = earlier.with_overrides(
        study="edited", space=str(edited), warm_start="earlier", trials=5
    )
    warm = run_search(config).warm_start
    assert warm is not None
    refits = [r for s in warm["seeds"] for r in s["refits"]]
    outside = [r for r in refits if "mlcn2" in r.split(";")[0]]
    assert outside, refits  # the earlier best used mlcn2 lanes
    assert all("is no lane of this space" in r for r in outside), outside
    assert not any("does not fit these devices" in r for r in outside)


def test_matching_trials_become_data_and_do_not_count_toward_trials(
    earlier: SearchConfig,
) -> None:
    # another memory limit that does not bind: the same parameters build the same models
    config = earlier.with_overrides(study="less-memory", mem="11GB", warm_start="earlier", trials=4)
    result = run_search(config)
    warm = result.warm_start
    assert warm is not None
    source = {t.number: t for t in _trials(earlier, "earlier") if t.state == TrialState.COMPLETE}
    assert warm["transferred"] == len(source)
    trials = _trials(config, "less-memory")
    added = [t for t in trials if "transferred_from" in t.user_attrs]
    assert len(added) == len(source)
    for t in added:
        original = source[t.user_attrs["transferred_from"]["trial"]]
        assert t.values[0] == original.values[0]  # the same model, trained the same way
        assert t.user_attrs["arch"] == original.user_attrs["arch"]
    # every best architecture was added as data, so none is trained again
    assert not warm["seeds"]
    assert all("added as data" in s for s in warm["skipped"])
    new = [t for t in trials if "transferred_from" not in t.user_attrs]
    assert len(new) == 4  # --trials new trials on top of the data
    assert result.trial_counts["results"] == 4
    assert result.trial_counts["transferred"] == len(source)


def test_other_training_gives_seeds_but_no_data(earlier: SearchConfig) -> None:
    config = earlier.with_overrides(study="longer", epochs=3, warm_start="earlier", trials=5)
    warm = run_search(config).warm_start
    assert warm is not None
    assert warm["transferred"] == 0
    assert warm["no_transfer"] == "trained differently: epochs 2 (now 3)"
    # the top 5 are seeds, each model once (a reordering of one's lanes is that model)
    assert sum(seed["proposed"] for seed in warm["seeds"]) == 5
    assert all("builds the same model" in why for why in warm["skipped"])


def test_seeds_past_trials_are_not_queued(earlier: SearchConfig) -> None:
    # a queued trial always runs: five seeds used to run past --trials 2
    config = earlier.with_overrides(study="two", devices="4xK80", warm_start="earlier", trials=2)
    result = run_search(config)
    assert result.warm_start is not None
    assert len(result.warm_start["seeds"]) == 2
    past = [why for why in result.warm_start["skipped"] if "past the 2 trial(s) asked for" in why]
    assert len(past) == 3
    trials = _trials(config, "two")
    assert sum("repeat_of" not in t.user_attrs for t in trials) == 2
    assert all(t.state != TrialState.WAITING for t in trials)


def test_continuing_the_study_does_not_warm_start_again(earlier: SearchConfig) -> None:
    config = earlier.with_overrides(study="again", devices="4xK80", warm_start="earlier", trials=6)
    run_search(config)
    run_search(config.with_overrides(trials=8))
    seeds = [t for t in _trials(config, "again") if "warm_start" in t.user_attrs]
    assert len(seeds) == 5


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"warm_start": "missing"}, "warm_start 'missing': .*earlier"),
        ({"warm_start": "new"}, "warm_start 'new' is this search's own study"),
        ({"warm_start": "earlier", "space": "mlcn-thesis"}, "searched a 'buckets' space"),
    ],
    ids=["missing", "itself", "other-space"],
)
def test_refusals_name_the_reason_and_leave_no_study(
    earlier: SearchConfig, overrides: dict[str, object], message: str
) -> None:
    config = earlier.with_overrides(study="new", **overrides)
    with pytest.raises(SearchError, match=message):
        run_search(config)
    assert "new" not in [s.name for s in list_studies(config.storage)]


def test_a_study_without_results_is_refused(tmp_path: Path) -> None:
    run_search(_source(tmp_path, timeout=1e-9))  # made, but stopped before any trial
    assert _trials(_source(tmp_path), "earlier") == []
    config = _source(tmp_path, study="new", devices="4xK80", warm_start="earlier")
    with pytest.raises(SearchError, match="no completed feasible trial"):
        run_search(config)


def test_the_cli_refuses_in_one_line(earlier: SearchConfig) -> None:
    result = run_cli(
        "search", "--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB",
        "--trials", "2", "--storage", earlier.storage, "--study", "new",
        "--warm-start", "nope",
    )  # fmt: skip
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "--warm-start 'nope'" in lines[0]
    assert "earlier" in lines[0]
    assert "did you mean 'new'" not in lines[0]  # refused before the study was made
    assert "Traceback" not in result.stderr


def test_the_summary_says_the_seeds_were_rebuilt_for_the_new_devices(
    earlier: SearchConfig,
) -> None:
    """Not "0 refit" when every seed's model was rebuilt (a new user's finding)."""
    result = run_cli(
        "search", "--evaluator", "proxy", "--devices", "4xK80", "--mem", "12GB",
        "--flops", "0.25x", "--trials", "3", "--storage", earlier.storage,
        "--study", "bigger", "--warm-start", "earlier", "--warm-start-top", "2",
        "--no-prune", "--epochs", "2", "--sampler", "random",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "2 of its best architectures queued first (0 with parameters refit" in text
    assert "2 rebuilt for these devices" in text
    assert " lanes -> " in text


def test_two_source_trials_that_build_one_model_queue_it_once(
    earlier: SearchConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Source trials with other parameters that the new devices build into the same
    model queue it once, counted, and the others are named as skipped."""
    from nasmlcn.search._prepare import warm as _warm

    def one_model(trial: object, setup: object, params: object) -> dict:
        lanes = "4*mlcn2:2x1"
        return {"before": lanes, "after": lanes, "lanes_before": 4, "lanes_after": 4,
                "rebuilt": False}  # fmt: skip

    monkeypatch.setattr(_warm, "_models", one_model)
    config = earlier.with_overrides(
        study="again", devices="4xK80", warm_start="earlier", warm_start_top=3, trials=4
    )  # other devices: nothing is added as data, every best trial is a seed
    warm = run_search(config).warm_start
    assert warm is not None
    (seed,) = warm["seeds"]
    assert seed["proposed"] == 3
    assert len(warm["skipped"]) == 2
    assert all(f"builds the same model as trial {seed['trial']}" in s for s in warm["skipped"])
    queued = [t for t in _trials(config, "again") if "warm_start" in t.user_attrs]
    assert len(queued) == 1


def test_a_pool_of_workers_warm_starts_the_study_once(earlier: SearchConfig) -> None:
    """With workers, the parent makes the study and warm-starts it before any worker
    takes a trial: the earlier study's best architectures are the first trials."""
    config = earlier.with_overrides(
        study="pooled", devices="4xK80", warm_start="earlier", warm_start_top=2, trials=4
    )
    result = run_search(config, workers=2)
    assert result.errors == []
    assert result.warm_start is not None
    assert len(result.warm_start["seeds"]) == 2
    seeded = [t for t in _trials(config, "pooled") if "warm_start" in t.user_attrs]
    assert sorted(t.number for t in seeded) == [0, 1]  # queued first, once
