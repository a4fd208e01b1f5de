"""Optuna's samplers, seeded: random, multivariate TPE, NSGA-II and GP."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn.search.samplers._base import register_sampler

if TYPE_CHECKING:
    from optuna.samplers import BaseSampler

NSGA2_POPULATION = 20
"""NSGA-II's population: small enough that short searches reach a second
generation (Optuna's default of 50 would make a 20-trial search all random)."""


@register_sampler("random", "uniform random (thesis Alg. 6)", random_fallback=False)
def random_sampler(seed: int, trials: int) -> BaseSampler:
    from optuna.samplers import RandomSampler

    return RandomSampler(seed=seed)


@register_sampler("tpe", "multivariate TPE (Optuna's default family)")
def tpe_sampler(seed: int, trials: int) -> BaseSampler:
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


@register_sampler("nsga2", "NSGA-II, as NASCaps (population 20)", random_fallback=False)
def nsga2_sampler(seed: int, trials: int) -> BaseSampler:
    from optuna.samplers import NSGAIISampler

    return NSGAIISampler(seed=seed, population_size=NSGA2_POPULATION)


@register_sampler("gp", "Gaussian-process Bayesian optimisation (Optuna's GPSampler)")
def gp_sampler(seed: int, trials: int) -> BaseSampler:
    from optuna.samplers import GPSampler

    # Bayesian optimisation: a Gaussian process per objective (and per constraint
    # set with trial.set_constraint: memory, latency budget, learning), for one or
    # several objectives; random for the first trials, as TPE.
    return GPSampler(seed=seed, n_startup_trials=min(10, max(trials // 4, 2)))
