"""A sampler: what proposes each trial's parameters, by name (``--sampler``), in
``SAMPLERS``; each is added with :func:`register_sampler` where it is defined
(Optuna's own, seeded: ``_optuna``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import SearchError
from nasmlcn.registry import Registry

if TYPE_CHECKING:
    import optuna
    from optuna.samplers import BaseSampler

SamplerFactory = Callable[[int, int], "BaseSampler"]
"""``make(seed, trials)``: the sampler of a search of ``trials`` trials."""


@dataclass(frozen=True)
class SamplerEntry:
    """``make(seed, trials)`` builds the sampler for a search of ``trials`` trials.

    ``random_fallback``: after repeats in a row a random candidate is proposed
    instead (search/_run/repeats.py); off for NSGA-II, whose generations are its own
    (a stranger has none, and mutation proposes new points anyway), and for random.
    """

    name: str
    make: SamplerFactory
    description: str
    random_fallback: bool = True


SAMPLERS: Registry[SamplerEntry] = Registry("sampler")


def register_sampler(
    name: str, description: str, *, random_fallback: bool = True
) -> Callable[[SamplerFactory], SamplerFactory]:
    """Registers the decorated ``make(seed, trials)`` in ``SAMPLERS`` as ``name``
    (``--sampler``), with its one-line ``description``; returns it unchanged."""

    def add(make: SamplerFactory) -> SamplerFactory:
        SAMPLERS.register(name, SamplerEntry(name, make, description, random_fallback))
        return make

    return add


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
