"""Samplers by name: Optuna's own, seeded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import SearchError
from nasmlcn.registry import Registry

if TYPE_CHECKING:
    import optuna
    from optuna.samplers import BaseSampler

NSGA2_POPULATION = 20
"""NSGA-II's population: small enough that short searches reach a second
generation (Optuna's default of 50 would make a 20-trial search all random)."""


@dataclass(frozen=True)
class SamplerEntry:
    """``make(seed, trials)`` builds the sampler for a search of ``trials`` trials.

    ``random_fallback``: after repeats in a row a random candidate is proposed
    instead (search/_trial/repeats.py); off for NSGA-II, whose generations are its own
    (a stranger has none, and mutation proposes new points anyway), and for random.
    """

    name: str
    make: Callable[[int, int], BaseSampler]
    description: str
    random_fallback: bool = True


SAMPLERS: Registry[SamplerEntry] = Registry("sampler")


def _random(seed: int, trials: int) -> BaseSampler:
    from optuna.samplers import RandomSampler

    return RandomSampler(seed=seed)


def _tpe(seed: int, trials: int) -> BaseSampler:
    from optuna.samplers import TPESampler

    # Multivariate TPE models the lane parameters jointly (a lane's width and
    # depth act together), and samples every parameter in one pass: faster
    # per trial than independent TPE as well. constant_liar: with several workers,
    # trials still running count as bad, so workers do not all propose near the
    # same good point (it changes nothing for one worker).
    return TPESampler(
        seed=seed,
        multivariate=True,
        constant_liar=True,
        n_startup_trials=min(10, max(trials // 4, 2)),
    )


def _nsga2(seed: int, trials: int) -> BaseSampler:
    from optuna.samplers import NSGAIISampler

    return NSGAIISampler(seed=seed, population_size=NSGA2_POPULATION)


SAMPLERS.register(
    "random", SamplerEntry("random", _random, "uniform random (thesis Alg. 6)", False)
)
SAMPLERS.register("tpe", SamplerEntry("tpe", _tpe, "multivariate TPE (Optuna's default family)"))
SAMPLERS.register(
    "nsga2", SamplerEntry("nsga2", _nsga2, "NSGA-II, as NASCaps (population 20)", False)
)


def _gp(seed: int, trials: int) -> BaseSampler:
    from optuna.samplers import GPSampler

    # Bayesian optimisation: a Gaussian process per objective (and per constraint
    # set with trial.set_constraint: memory, latency budget, learning), for one or
    # several objectives; random for the first trials, as TPE.
    return GPSampler(seed=seed, n_startup_trials=min(10, max(trials // 4, 2)))


SAMPLERS.register(
    "gp", SamplerEntry("gp", _gp, "Gaussian-process Bayesian optimisation (Optuna's GPSampler)")
)


def suggest_all(trial: optuna.Trial, distributions: Mapping[str, Any]) -> None:
    """Suggests every parameter of ``distributions`` on ``trial`` through the public
    API (what ``study.ask(distributions)`` does; a queued trial gets its fixed values).

    Raises:
        SearchError: A distribution of a kind no space uses.
    """
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    for name, dist in distributions.items():
        if isinstance(dist, FloatDistribution):
            trial.suggest_float(name, dist.low, dist.high, step=dist.step, log=dist.log)
        elif isinstance(dist, IntDistribution):
            trial.suggest_int(name, dist.low, dist.high, step=dist.step, log=dist.log)
        elif isinstance(dist, CategoricalDistribution):
            trial.suggest_categorical(name, dist.choices)
        else:  # pragma: no cover - spaces use the three kinds above
            raise SearchError(f"parameter {name!r} has an unsupported distribution {dist!r}")
