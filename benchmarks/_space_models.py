"""Models of the default search space, as benchmarks draw them: random parameters
(Optuna's ``RandomSampler``, seeded) built by the space for the given target devices,
exactly as a search would build its trials' models."""

from __future__ import annotations

from typing import Any

from nasmlcn.specs import MLCNSpec


def default_space_specs(count: int, seed: int = 0, **config: Any) -> list[MLCNSpec]:
    """``count`` models of the default space; ``config``: :class:`SearchConfig` fields
    (``devices``, ``mem``, ``flops``, ``dataset``, ...)."""
    import optuna

    from nasmlcn.search import SearchConfig, setup_search

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    setup = setup_search(SearchConfig(**{"storage": "sqlite://", **config}))
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    specs = []
    for _ in range(count):
        trial = study.ask(setup.space.model_distributions())
        specs.append(setup.space.build(trial.params, setup.space_context).spec)
    return specs
