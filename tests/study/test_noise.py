"""The noise of one run from replicate pairs, and the study's one replicate: its
claim, taken over once stale, and its record (``nasmlcn.study``'s noise names)."""

from __future__ import annotations

import math
import time
from typing import Any

import optuna
import pytest

from nasmlcn.study import (
    Noise,
    Replicate,
    claim_replicate,
    noise_estimate,
    release_replicate,
    replicate_taken,
    replicates,
    store_replicate,
    study_info,
    update_study_info,
)


def _pair(number: int, accuracy: float, again: float, seed: int = 11) -> Replicate:
    return Replicate(
        number=number,
        accuracy=accuracy,
        replicate_accuracy=again,
        seed=seed,
        replicate_seed=seed + 1,
        epochs=2,
        evaluator="train",
        seconds=1.0,
        worker="here:1",
    )


def _info(*pairs: Replicate) -> dict[str, Any]:
    return {"replicates": {"version": 1, "models": [p.to_dict() for p in pairs]}}


def test_one_pair_gives_the_difference_over_root_two() -> None:
    noise = noise_estimate(_info(_pair(3, 0.75, 0.80)))
    assert noise is not None
    assert noise.pairs == 1
    assert noise.sd == pytest.approx(0.0353553, abs=1e-6)  # 0.05 / 1.41421


def test_several_pairs_are_pooled() -> None:
    # differences 0.03 and 0.04: sd^2 = (0.0009 + 0.0016) / (2 * 2) = 0.000625
    noise = noise_estimate(_info(_pair(1, 0.83, 0.80), _pair(2, 0.70, 0.74)))
    assert noise is not None
    assert (noise.sd, noise.pairs) == (pytest.approx(0.025), 2)


def test_within_noise_is_the_95_percent_band_of_two_runs_difference() -> None:
    noise = Noise(0.025, 2)
    assert noise.margin == pytest.approx(0.0692965, abs=1e-6)  # 1.96 * sqrt(2) * 0.025
    assert noise.within(0.80, 0.80)
    assert noise.within(0.80, 0.731)
    assert not noise.within(0.80, 0.730)
    assert noise.within(0.80, 0.95)  # better than the best is within too
    assert noise.to_dict() == {"sd": 0.025, "pairs": 2, "margin": noise.margin}


def test_no_replicate_no_estimate_and_a_newer_record_is_not_read() -> None:
    assert noise_estimate({}) is None
    assert noise_estimate({"replicates": {"models": []}}) is None
    newer = {**_pair(1, 0.8, 0.7).to_dict(), "version": 2}
    assert noise_estimate({"replicates": {"models": [newer, {"number": 1}]}}) is None
    assert Replicate.from_dict(_pair(1, 0.8, 0.7).to_dict()) == _pair(1, 0.8, 0.7)


def test_one_claim_per_study_a_stale_one_is_taken_over() -> None:
    study = optuna.create_study()
    update_study_info(study, "identity", {"kept": True})
    assert claim_replicate(study, 4, "a:1", stale_after_s=3600.0)
    assert replicate_taken(study_info(study))
    assert not claim_replicate(study, 4, "b:2", stale_after_s=3600.0)  # a's is alive
    release_replicate(study, "b:2")  # not b's: it stays
    assert replicate_taken(study_info(study))
    release_replicate(study, "a:1")
    assert not replicate_taken(study_info(study))
    assert claim_replicate(study, 4, "a:1", stale_after_s=0.0)
    time.sleep(0.01)
    assert not replicate_taken(study_info(study))  # a died: stale at once
    assert claim_replicate(study, 4, "b:2", stale_after_s=3600.0)
    assert study_info(study)["identity"] == {"kept": True}  # the rest of the record stays


def test_a_stored_replicate_ends_the_claims_and_its_twin_is_not_stored_again() -> None:
    study = optuna.create_study()
    assert claim_replicate(study, 4, "b:2", stale_after_s=3600.0)
    made = _pair(4, 0.80, 0.78)
    assert store_replicate(study, Replicate(**{**made.to_dict(), "worker": "b:2"}))
    stored = study_info(study)["replicates"]
    assert stored["claim"] is None
    assert not claim_replicate(study, 4, "c:3", stale_after_s=3600.0)  # once per study
    # a worker taken for dead (its claim taken over) finishes the same training
    assert not store_replicate(study, made)
    assert [r.number for r in replicates(study_info(study))] == [4]
    noise = noise_estimate(study_info(study))
    assert noise is not None
    assert noise.sd == pytest.approx(0.02 / math.sqrt(2))
