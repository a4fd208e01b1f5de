"""Thirty trials, thirty models: by default ``--trials`` counts models. A
proposal of a model already trained or pruned is recorded as a repeat (the sampler
sees it) and the run asks again, the sampler first, then a random candidate; a
pruned model's curve goes back to the pruner instead of being trained again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nasmlcn.search import FALLBACK_AFTER, SearchConfig, describe_counts, run_search
from nasmlcn.study import TrialRecord, load_existing_study


def _config(tmp_path: Path, **overrides: object) -> SearchConfig:
    config = SearchConfig(
        evaluator="proxy",
        devices="8xK80",
        mem="12GB",
        storage=f"sqlite:///{tmp_path / 's.db'}",
        study="s",
    )
    return config.with_overrides(**overrides)


def test_trials_counts_models_and_repeats_come_on_top(tmp_path: Path) -> None:
    """GP proposes models it has seen (seed 2: 10 distinct in 30 trials when every
    proposal counted); now 15 trials are 15 models, with the pruner on."""
    config = _config(tmp_path, sampler="gp", trials=15, seed=2)
    result = run_search(config)
    assert result.stopped == "trials"
    trials = load_existing_study("s", config.storage).trials
    records = [TrialRecord.of(t) for t in trials]
    models = [r for r in records if r.repeat_of is None]
    repeats = [r for r in records if r.repeat_of is not None]
    assert len(models) == 15
    assert len({r.model_key for r in models}) == 15  # each a model of its own
    assert repeats, "GP repeats itself on this seed"
    for repeat in repeats:  # recorded, so the sampler sees them, as their original
        original = records[repeat.repeat_of]  # type: ignore[index]
        assert original.repeat_of is None
        assert repeat.model_key == original.model_key
        assert repeat.state == original.state
    # after FALLBACK_AFTER repeats in a row a random candidate is asked for, and said so
    fallbacks = [t for t in trials if "proposed_by" in t.user_attrs]
    assert fallbacks
    for t in fallbacks:
        before = records[t.number - FALLBACK_AFTER : t.number]
        assert all(r.repeat_of is not None for r in before)
        assert t.user_attrs["proposed_by"].startswith("random, after")
    counts = result.trial_counts
    assert counts["models"] == 15  # what --trials counted, as --json says it
    assert counts["results"] == 15 + len(repeats)
    text = describe_counts(counts)
    assert text.startswith("15 models: ")
    assert f"{len(repeats)} more proposals were repeats" in text


def test_counting_repeats_keeps_the_old_meaning(tmp_path: Path) -> None:
    config = _config(tmp_path, sampler="gp", trials=15, seed=2, count_repeats=True)
    result = run_search(config)
    trials = load_existing_study("s", config.storage).trials
    assert len(trials) == 15
    models = {TrialRecord.of(t).model_key for t in trials}
    assert len(models) < 15  # the repeats took trials
    assert "(nothing trained; counted: --count-repeats)" in describe_counts(
        result.trial_counts, True
    )


@pytest.fixture(scope="module")
def table_search(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The thesis's 8 fixed models, proposed again and again (40 trials asked), searched
    once under the live display (which only watches the search): its config (naming
    its storage), result, the display's text and where its trials bar ended. The two
    tests below only read it."""
    import io

    from rich.console import Console

    from nasmlcn.cli._search_progress import SearchProgress

    config = _config(
        tmp_path_factory.mktemp("table"), space="mlcn-table", devices="1xK80",
        sampler="random", epochs=4, trials=40, seed=1,
    )  # fmt: skip
    text = io.StringIO()
    with SearchProgress(Console(file=text, force_terminal=False, width=200)) as progress:
        result = run_search(config, [progress])
        bar = int(progress.progress.tasks[0].completed)
    return {"config": config, "result": result, "shown": text.getvalue(), "bar": bar}


def test_a_pruned_model_is_not_trained_again_to_be_pruned_again(
    table_search: dict[str, Any],
) -> None:
    """The thesis's 8 fixed models, proposed again and again: a pruned one's stored
    curve goes back to the pruner; the trial is a PRUNED repeat of it where the
    pruner stops it, and trains (further than before) only where it would not."""
    config, result = table_search["config"], table_search["result"]
    assert result.stopped == "repeats"  # 8 models, then 25 repeats in a row
    replays = [p for p in result.pruned_in_study() if p["repeat_of"] is not None]
    assert replays
    trials = load_existing_study("s", config.storage).trials
    records = [TrialRecord.of(t) for t in trials]
    replayed = [r for r in records if r.state == "PRUNED" and r.repeat_of is not None]
    assert replayed
    for r in replayed:
        original = records[r.repeat_of]  # type: ignore[index]
        assert original.state == "PRUNED"
        assert original.repeat_of is None
        assert r.model_key == original.model_key
        assert "replayed" in (r.prune_reason or "")
        assert r.training["seconds"] == 0.0  # nothing trained
        assert r.seconds_saved == 0.0  # and no training saved beyond the original's
        curve = original.training["val_accuracy_per_epoch"]
        assert r.training["val_accuracy_per_epoch"] == curve[: r.training["epochs_run"]]
    # a model trained (not replayed) after it was pruned went further than before
    first_pruned: dict[str | None, int] = {}
    for r in records:
        if r.state != "PRUNED" or r.repeat_of is not None:
            continue
        ran = len(r.training["val_accuracy_per_epoch"])
        if r.model_key in first_pruned:
            assert ran > first_pruned[r.model_key]
        else:
            first_pruned[r.model_key] = ran
    assert {r.model_key for r in records if r.repeat_of is None} == {r.model_key for r in records}


def test_the_live_display_says_a_repeat_is_one_and_does_not_count_it(
    table_search: dict[str, Any],
) -> None:
    config, bar, shown = table_search["config"], table_search["bar"], table_search["shown"]
    records = [TrialRecord.of(t) for t in load_existing_study("s", config.storage).trials]
    assert bar == sum(r.repeat_of is None for r in records)  # the bar counts models
    for r in records:
        if r.repeat_of is not None:
            assert f"(a repeat of #{r.repeat_of}: nothing trained, not counted)" in shown
            if r.state == "PRUNED":  # the stored reason: whose curve stopped it again
                assert f"(trial {r.repeat_of}'s curve of this model, replayed)" in (
                    r.prune_reason or ""
                )
                assert f"trial {r.number}: PRUNED — {r.prune_reason}  (a repeat of" in shown


def test_a_model_that_does_not_fit_is_pruned_untrained_once_and_counted_once(
    tmp_path: Path,
) -> None:
    """The thesis's 8 fixed models on a device too small for half of them: each that
    does not fit is PRUNED untrained with its memory overflow recorded (the
    constraint a sampler learns from), never FAIL; proposed again, it is a repeat of
    its first trial, so ``--trials`` counts each model once, fitting or not."""
    config = _config(
        tmp_path, space="mlcn-table", devices="1xK80", mem="0.3GB", sampler="random", trials=6
    )
    result = run_search(config)
    trials = load_existing_study("s", config.storage).trials
    records = [TrialRecord.of(t) for t in trials]
    assert not [r for r in records if r.state == "FAIL"]
    unfit = [r for r in records if r.constraints.get("memory", 0.0) > 0]
    assert unfit, "this device holds only some of the table's models"
    for r in unfit:
        assert r.state == "PRUNED"
        assert (r.prune_reason or "").startswith("does not fit the devices: ")
        # stored as the run was set: the option, as the study's other reasons are
        assert (r.prune_reason or "").endswith("or more memory (--mem)")
        assert not r.accuracy_per_epoch  # nothing trained
        plan = trials[r.number].user_attrs["plan"]
        assert any(d["memory_bytes"] > d["memory_limit_bytes"] for d in plan["devices"])
    originals = [r for r in unfit if r.repeat_of is None]
    assert len({r.model_key for r in originals}) == len(originals)  # each model once
    repeats = [r for r in unfit if r.repeat_of is not None]
    assert repeats, "random draws of 8 models repeat some"
    for r in repeats:
        assert records[r.repeat_of].model_key == r.model_key  # type: ignore[index]
    models = [r for r in records if r.repeat_of is None]
    assert len(models) == len({r.model_key for r in models}) == 6
    assert result.stopped == "trials"
    pruned = {p["number"]: p for p in result.to_dict()["pruned"]}
    assert {n for n, p in pruned.items() if not p["fits"]} == {r.number for r in unfit}
