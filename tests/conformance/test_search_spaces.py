"""Conformance of every search-space kind (``SPACE_KINDS``) and every named space
(``available_spaces()``, the files ``load_space`` finds).

The contract (``nasmlcn/search/spaces/_base.py``): a space's distributions are fixed
for a study; ``build(params, ctx)`` turns any parameters drawn from them into a
model for the study's dataset and devices, deterministically; a feasible candidate
fits the devices' memory (the plan the runner makes of it holds), an infeasible one
says why.
"""

from __future__ import annotations

import optuna
import pytest

from nasmlcn.planning import plan_model
from nasmlcn.search import SearchConfig, SearchSetup, setup_search
from nasmlcn.search.spaces import SPACE_KINDS, SearchSpace, available_spaces, load_space
from nasmlcn.specs import LANE_TYPES

KINDS = list(SPACE_KINDS)
SPACES = list(available_spaces())
DEVICES = ["2xK80", "8xK80", "1xK80,1xM40,1xP100,1xV100"]
OBJECTIVES = [("accuracy",), ("accuracy", "latency")]
SAMPLES = 15


@pytest.mark.parametrize("kind", KINDS)
def test_kind_is_a_search_space_named_as_registered(kind: str) -> None:
    cls = SPACE_KINDS.get(kind)
    assert issubclass(cls, SearchSpace)
    assert cls.kind == kind
    # the named-space tests below cover a kind only through a built-in file
    assert any(load_space(name).kind == kind for name in SPACES), f"no built-in space of {kind}"


def _setup(space: str, devices: str, objectives: tuple[str, ...]) -> SearchSetup:
    return setup_search(
        SearchConfig(
            space=space,
            devices=devices,
            objectives=objectives,
            evaluator="proxy",
            storage="sqlite:///unused.db",  # setup_search never opens it
        )
    )


@pytest.mark.parametrize("objectives", OBJECTIVES, ids="-".join)
@pytest.mark.parametrize("devices", DEVICES)
@pytest.mark.parametrize("space", SPACES)
def test_sampled_parameters_build_models_that_fit(
    space: str, devices: str, objectives: tuple[str, ...]
) -> None:
    setup = _setup(space, devices, objectives)
    s, ctx = setup.space, setup.space_context
    distributions = s.distributions()
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    feasible = 0
    for _ in range(SAMPLES):
        params = study.ask(distributions).params
        candidate = s.build(params, ctx)
        spec = candidate.spec
        assert spec.input_shape == setup.dataset.input_shape
        assert spec.num_classes == setup.dataset.num_classes
        assert (spec.routing, spec.decoder) == (s.routing, s.decoder)
        assert all(lane.type in LANE_TYPES for lane in spec.lanes)
        again = s.build(params, ctx)
        assert (again.spec, again.assignment) == (spec, candidate.assignment), params
        if not candidate.feasible:
            assert candidate.reason, params
            continue
        feasible += 1
        if candidate.assignment is not None:
            assert len(candidate.assignment) == spec.num_lanes
        plan = plan_model(
            spec,
            setup.devices,
            cost_model=setup.cost_model,
            batch_size=int(params.get("batch_size", setup.config.batch_size)),
            assignment=candidate.assignment,  # checked against memory
        )
        for device in plan.per_device:
            assert device.memory_bytes <= device.memory_limit, (params, plan.to_dict())
    assert feasible, f"no sampled model of {space} fits {devices}"
    assert s.distributions() == distributions  # building changes no distribution


@pytest.mark.parametrize("space", SPACES)
def test_a_model_that_does_not_fit_is_planned_with_its_overflow(space: str) -> None:
    """On a device too small for many models, the trial's plan of every candidate is
    made (the trial records it): a feasible one within the memory, an infeasible one
    (kinds that cannot repair) with every lane placed and a device over its memory,
    the overflow its memory constraint records for the sampler."""
    from nasmlcn.search._run.trial import build_and_place

    setup = setup_search(
        SearchConfig(
            space=space, devices="1xK80", mem="0.1GB", evaluator="proxy",
            storage="sqlite:///unused.db",
        )
    )  # fmt: skip
    distributions = setup.space.distributions()
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    unfit = 0
    for _ in range(SAMPLES):
        params = study.ask(distributions).params
        candidate, plan = build_and_place(setup, params)
        over = [d for d in plan.per_device if d.memory_bytes > d.memory_limit]
        assert bool(over) != candidate.feasible, (params, candidate.reason)
        assert len(plan.placement.assignment) == candidate.spec.num_lanes
        unfit += not candidate.feasible
    if setup.space.kind in ("table", "homogeneous"):  # no repair makes these fit
        assert unfit, f"{space}: every sampled model fits 0.1 GB"
