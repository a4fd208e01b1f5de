"""Every model and training choice as a dimension a space file can open: routing,
decoder, weight sharing and lane dropout (into the trial's spec and cost context),
lr policy and batch policy (into the job the evaluator trains)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution

from nasmlcn.errors import SearchError
from nasmlcn.search import (
    EpochCallback,
    EvalRequest,
    Evaluation,
    ProxyEvaluator,
    SearchConfig,
    run_search,
)
from nasmlcn.search._run.repeats import TrialTraining
from nasmlcn.search.spaces import load_space
from nasmlcn.specs import arch_from_dict
from nasmlcn.study import TrialRecord, load_existing_study

OPENED = """
routing = ["vector", "classwise"]
decoder = ["full", "reduced", "none"]
weight_sharing = [false, true]
lane_dropout = [0.0, 0.5]

[training]
lr_policy = ["fixed", "warm-restarts", "phase-restarts"]
batch_policy = ["fixed", "adabatch", "warmadabatch"]
"""

HEAD = 'kind = "homogeneous"\nlane_types = ["mlcn1", "mlcn2"]\nwidth = [1, 2]\ndepth = [1, 2]\n'


def _space_file(tmp_path: Path, body: str = OPENED, head: str = HEAD) -> Path:
    path = tmp_path / "opened.toml"
    path.write_text(head + body)
    return path


def test_a_space_file_opens_every_choice_as_a_dimension(tmp_path: Path) -> None:
    space = load_space(str(_space_file(tmp_path)))
    dists = space.distributions()
    assert list(dists) == [
        *("type", "width", "depth", "lanes"),
        *("routing", "decoder", "weight_sharing", "lane_dropout"),
        *("lr_policy", "batch_policy"),
    ]
    assert dists["decoder"] == CategoricalDistribution(("full", "reduced", "none"))
    assert dists["weight_sharing"] == CategoricalDistribution((False, True))
    assert dists["lane_dropout"] == FloatDistribution(0.0, 0.5)
    assert dists["batch_policy"] == CategoricalDistribution(("fixed", "adabatch", "warmadabatch"))
    # study-wide settings (setup's cost context, the head's reserve): the costliest opened
    assert (space.routing, space.decoder, space.weight_sharing) == ("classwise", "full", False)


def test_a_space_that_opens_nothing_keeps_its_parameters(tmp_path: Path) -> None:
    fixed = load_space(str(_space_file(tmp_path, 'routing = "classwise"\nlane_dropout = 0.2\n')))
    assert list(fixed.distributions()) == ["type", "width", "depth", "lanes"]
    assert fixed.routing == "classwise"


def _context(space: Any) -> Any:
    from nasmlcn.costs import CostContext, get_cost_model
    from nasmlcn.hardware import parse_devices
    from nasmlcn.planning import parse_flops
    from nasmlcn.search.spaces import SpaceContext

    ctx = CostContext(routing=space.routing, decoder=space.decoder)
    return SpaceContext(parse_devices("2xK80"), get_cost_model("analytic"), ctx, parse_flops("1x"))


def test_build_puts_the_trials_settings_into_spec_and_costs(tmp_path: Path) -> None:
    space = load_space(str(_space_file(tmp_path)))
    ctx = _context(space)
    params: dict[str, Any] = {"type": "mlcn2", "width": 2, "depth": 1, "lanes": 3}
    params |= {"routing": "vector", "decoder": "reduced", "weight_sharing": True}
    params |= {"lane_dropout": 0.25, "lr_policy": "fixed", "batch_policy": "warmadabatch"}
    candidate = space.build(params, ctx)
    spec = candidate.spec
    assert (spec.routing, spec.decoder, spec.weight_sharing) == ("vector", "reduced", True)
    assert spec.lane_dropout == 0.25
    # the trial trains with the sampled settings, read from its parameters
    training = TrialTraining.of(params, batch_size=100)
    assert (training.lr_policy, training.batch_policy, training.batch_size) == (
        "fixed",
        "warmadabatch",
        100,
    )
    trial_ctx = space.trial_context(params, ctx).cost_context
    assert (trial_ctx.routing, trial_ctx.decoder, trial_ctx.weight_sharing) == (
        "vector",
        "reduced",
        True,
    )
    # the lanes were costed as built: shared transforms are fewer parameters
    shared = ctx.cost_model.lane_cost(spec.lanes[0], trial_ctx)
    unshared = ctx.cost_model.lane_cost(spec.lanes[0], ctx.cost_context)
    assert shared.params < unshared.params


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('routing = "vectr"\n', 'routing must be one of "classwise", "vector"'),
        ('decoder = ["full", "half"]\n', "decoder must be one of"),
        ("weight_sharing = 1\n", "weight_sharing must be one of false, true"),
        ("lane_dropout = [0.5, 0.2]\n", "lane_dropout must be a number in"),
        ("lane_dropout = 1.0\n", "lane_dropout must be a number in"),
        ('[training]\nlr_policy = ["cosine"]\n', "unknown learning-rate policy 'cosine'"),
        ('[training]\nbatch_policy = "fixed"\n', "training.batch_policy must list"),
        ("[training]\nlr = 0.01\n", r"training.lr must be \[low, high\] .*, got 0.01"),
        ("[training]\nbatch_size = [50, 50]\n", r"different batch sizes > 0, got \[50, 50\]"),
        ('[training]\nbatch_policy = ["adabach"]\n', "did you mean 'adabatch'"),
        ("[training]\nmomentum = [0.9]\n", "known keys: lr, batch_size, lr_policy, batch_policy"),
    ],
)
def test_bad_dimensions_are_one_line_errors(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(SearchError, match=message) as err:
        load_space(str(_space_file(tmp_path, body)))
    assert "\n" not in str(err.value)


class _Recording(ProxyEvaluator):
    """The proxy, keeping every job it was given."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        self.jobs: list[EvalRequest] = []

    def evaluate(self, job: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        self.jobs.append(job)
        return super().evaluate(job, on_epoch)


def test_trials_sample_every_dimension_and_the_evaluator_gets_them(tmp_path: Path) -> None:
    config = SearchConfig(
        devices="2xK80",
        mem="12GB",
        space=str(_space_file(tmp_path)),
        sampler="random",
        evaluator="proxy",
        epochs=2,
        trials=8,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        prune=False,
    )
    evaluator = _Recording()
    result = run_search(config, evaluator=evaluator)
    assert len(evaluator.jobs) == 8
    study = load_existing_study(result.study, config.storage)
    by_number = {t.number: t for t in study.trials}
    seen: dict[str, set[Any]] = {}
    for job in evaluator.jobs:
        params = by_number[job.trial].params
        for key in ("routing", "decoder", "weight_sharing", "lane_dropout"):
            assert getattr(job.spec, key) == params[key]
        assert (job.lr_policy, job.batch_policy) == (params["lr_policy"], params["batch_policy"])
        stored = arch_from_dict(TrialRecord.of(by_number[job.trial]).arch)
        assert stored == job.spec  # what the study keeps is what was evaluated
        for key, value in params.items():
            seen.setdefault(key, set()).add(value)
    # random sampling over 8 trials visits more than one value of each categorical
    for key in ("routing", "weight_sharing", "lr_policy", "batch_policy"):
        assert len(seen[key]) > 1, (key, seen[key])


def test_the_train_evaluator_trains_with_the_spaces_policies(tmp_path: Path) -> None:
    body = (
        'decoder = "none"\nweight_sharing = true\n'
        '[training]\nlr_policy = ["phase-restarts"]\nbatch_policy = ["warmadabatch"]\n'
    )
    head = 'kind = "homogeneous"\nlane_types = ["mlcn1"]\nwidth = [1, 1]\ndepth = [1, 1]\n'
    config = SearchConfig(
        devices="2xK80",
        mem="12GB",
        space=str(_space_file(tmp_path, body, head + "lanes = [1, 1]\n")),
        evaluator="train",
        dataset="synthetic",
        epochs=4,
        train_limit=6,
        val_limit=6,
        batch_size=4,
        trials=1,
        storage=f"sqlite:///{tmp_path / 's.db'}",
        run_on="cpu",
    )
    result = run_search(config)
    assert [t.state for t in result.run_trials] == ["COMPLETE"]
    (trial,) = load_existing_study(result.study, config.storage).trials
    assert trial.params == {
        **{"type": "mlcn1", "width": 1, "depth": 1, "lanes": 1},
        **{"lr_policy": "phase-restarts", "batch_policy": "warmadabatch"},
    }
    epochs = trial.user_attrs["training"]["extra"]["per_epoch"]
    assert [e["batch_size"] for e in epochs] == [1, 1, 1, 4]  # WarmAdaBatch's sizes
    assert epochs[3]["lr"] == pytest.approx(1e-3)  # restarted at batch 4
    assert epochs[2]["lr"] < epochs[1]["lr"] < 1e-3  # the first cycle's cosine
    arch = arch_from_dict(TrialRecord.of(trial).arch)
    assert arch.weight_sharing is True
    assert arch.decoder == "none"
