"""A claim reseeds the study's sampler per trial instead of building a new one
(which made TPE recompute its search-space intersection over every trial)."""

from __future__ import annotations

import optuna
import pytest

from nasmlcn._optuna_compat import reseed_sampler
from nasmlcn.search import SAMPLERS

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _next_params(sampler: optuna.samplers.BaseSampler, seed: int | None, history: int) -> dict:
    study = optuna.create_study(sampler=sampler)
    for i in range(history):
        study.add_trial(
            optuna.trial.create_trial(
                params={"x": i / history},
                distributions={"x": optuna.distributions.FloatDistribution(0, 1)},
                value=float(i),
            )
        )
    if seed is not None:
        assert reseed_sampler(study.sampler, seed)
    trial = study.ask({"x": optuna.distributions.FloatDistribution(0, 1)})
    return trial.params


@pytest.mark.parametrize("name", ["random", "tpe", "nsga2"])
def test_every_registered_sampler_can_be_reseeded(name: str) -> None:
    entry = SAMPLERS.get(name)
    # a reseeded sampler draws what a fresh one with that seed draws
    a = _next_params(entry.make(1, 10), seed=123, history=3)
    b = _next_params(entry.make(2, 10), seed=123, history=3)
    c = _next_params(entry.make(1, 10), seed=124, history=3)
    fresh = _next_params(entry.make(123, 10), seed=None, history=3)
    assert a == b
    assert a == fresh
    assert a != c


def test_a_sampler_keeping_its_state_elsewhere_is_not_reseeded() -> None:
    class Opaque(optuna.samplers.RandomSampler):
        def __init__(self) -> None:
            super().__init__(seed=0)
            del self._rng

    assert not reseed_sampler(Opaque(), 5)
