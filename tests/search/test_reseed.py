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


# GP's acquisition after 3 trials has one optimum whatever the seed: its random
# start (before n_startup_trials) is what a seed changes.
@pytest.mark.parametrize(("name", "history"), [("random", 3), ("tpe", 3), ("nsga2", 3), ("gp", 1)])
def test_every_registered_sampler_can_be_reseeded(name: str, history: int) -> None:
    entry = SAMPLERS.get(name)
    # a reseeded sampler draws what a fresh one with that seed draws
    a = _next_params(entry.make(1, 10), seed=123, history=history)
    b = _next_params(entry.make(2, 10), seed=123, history=history)
    c = _next_params(entry.make(1, 10), seed=124, history=history)
    fresh = _next_params(entry.make(123, 10), seed=None, history=history)
    assert a == b
    assert a == fresh
    assert a != c


def test_every_sampler_is_registered_and_gp_models_the_history() -> None:
    assert sorted(SAMPLERS.names()) == ["gp", "nsga2", "random", "tpe"]
    gp = SAMPLERS.get("gp").make(0, 10)
    assert isinstance(gp, optuna.samplers.GPSampler)
    # past its random start, reseeded or fresh, it proposes the modelled optimum
    assert _next_params(gp, seed=5, history=3) == _next_params(
        SAMPLERS.get("gp").make(5, 10), None, 3
    )
    assert _next_params(SAMPLERS.get("gp").make(0, 10), None, 3) == {"x": 0.0}  # values grow with x


def test_a_sampler_keeping_its_state_elsewhere_is_not_reseeded() -> None:
    class Opaque(optuna.samplers.RandomSampler):
        def __init__(self) -> None:
            super().__init__(seed=0)
            del self._rng

    assert not reseed_sampler(Opaque(), 5)
