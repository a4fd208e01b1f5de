"""Warm start (``--warm-start STUDY``): begin a search from an earlier study's work.

Two kinds of help, on different conditions:

1. **Seeds.** The earlier study's best architectures (its best ``top`` trials, or
   its Pareto front's ``top`` most accurate) are queued as the new study's first
   trials (``enqueue_trial``) and trained there. They go in as *parameters*: a
   space's parameters describe a model independently of the devices (the buckets
   space's are lane kinds, their load shares and the fill), and the new study's
   space builds them into its own devices' buckets: composed and placed for their
   memory and load limits. This is the refit, and it is what makes a warm start
   work across device pools and memory limits. A value the new study cannot take is
   refit too: a lane kind the new devices cannot hold becomes the dearest kind of
   the new palette that costs no more (the cheapest when none does), a number
   outside a new range is clipped, a parameter the new space lacks is dropped and
   one it adds is left to the sampler. Each seed records where it came from and
   every change (``warm_start`` on the trial). Seeds count toward ``--trials``.
2. **Data.** Where the parameters match (the same parameters with the same
   distributions, and the same training: evaluator, dataset, epochs, images,
   batch size), the earlier study's completed trials whose model the new devices
   build *unchanged* are added to the new study as completed trials before any
   new trial: the same model trained the same way, so its accuracy is copied and
   its costs are predicted again for the new devices. The sampler starts with
   them as data (Optuna's recommended way of warm starting,
   ``study.add_trial``). They are marked ``transferred_from`` and do not count
   toward ``--trials`` (the search runs its ``--trials`` new ones on top); being
   real measurements of these models, they can be the study's answer (its best
   trial or on its front); their ``transferred_from`` says where they came from
   (their weights stay with the earlier study: ``nasmlcn retrain`` trains them again).

Refused, with one line and nothing written: an earlier study that does not exist
or was not made by ``nasmlcn search``, one that searched another kind of space,
the study itself, and one without a completed feasible trial. The warm start runs
once, when the study is created; continuing the study does not repeat it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nasmlcn.errors import NasmlcnError, SearchError, nested, option
from nasmlcn.search._results.summary import best_trials
from nasmlcn.search._run.trial import build_and_place, write_candidate
from nasmlcn.search.objectives._base import learning_constraint
from nasmlcn.search.samplers._base import suggest_all
from nasmlcn.study import (
    StudyRecord,
    TrialRecord,
    load_existing_study,
    update_study_info,
    write_training,
    write_transferred,
)

if TYPE_CHECKING:
    import optuna
    from optuna.distributions import BaseDistribution
    from optuna.trial import FrozenTrial

    from nasmlcn.search._prepare.setup import SearchSetup

WARM_START_ATTR = StudyRecord.WARM_START
"""The study's ``nasmlcn`` info key, and the seed trials' user attribute."""
TRAINING_FIELDS = ("evaluator", "dataset", "epochs", "train_limit", "val_limit", "batch_size")
"""The configuration that decides a trained result besides the model (the dataset
compared by what it is: a user's data by its content, wherever it was read)."""
DEFAULT_TOP = 5
WS = option("warm_start")


@dataclass(frozen=True)
class WarmStart:
    """What a warm start did.

    Attributes:
        source: The earlier study.
        seeds: Per queued seed: the earlier trial's number, its parameters as
            queued, and the changes the refit made.
        transferred: Earlier trials added as data.
        no_transfer: Why no trial could be added as data (None when some were, or
            only models the new devices build differently were left out).
        rebuilt_differently: Matching trials whose model the new devices build
            differently (not added).
    """

    source: str
    seeds: tuple[dict[str, Any], ...] = ()
    transferred: int = 0
    no_transfer: str | None = None
    rebuilt_differently: int = 0
    skipped: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "seeds": [dict(s) for s in self.seeds],
            "transferred": self.transferred,
            "no_transfer": self.no_transfer,
            "rebuilt_differently": self.rebuilt_differently,
            "skipped": list(self.skipped),
        }


def transferred_count(study: optuna.Study) -> int:
    """Trials a warm start added to ``study`` as data (they do not count toward
    ``--trials``)."""
    summary = StudyRecord.read(study).warm_start  # WarmStart.to_dict's
    return int(summary.get("transferred", 0)) if summary is not None else 0


def load_source(setup: SearchSetup, name: str, url: str | None) -> optuna.Study:
    """The earlier study, checked (see the module docstring for the refusals).

    Raises:
        SearchError: It cannot warm-start this search (one line, naming why).
    """
    config = setup.config
    where = (
        f"looked in {option('warm_start_storage')}"
        if url
        else f"looked in this search's {option('storage')}; give "
        f"{option('warm_start_storage')} URL where the earlier study is"
    )
    url = url or config.storage
    if name == config.study_name() and url == config.storage:
        raise SearchError(f"{WS} {name!r} is this search's own study; name an earlier one")
    try:
        source = load_existing_study(name, url)
    except NasmlcnError as err:
        raise SearchError(f"{WS} {name!r}: {nested(err)} ({where})") from None
    space = StudyRecord.read(source).space
    if space is None:
        raise SearchError(f"{WS} {name!r} was not made by nasmlcn search; name a study it made")
    if space.get("kind") != setup.space.kind:
        raise SearchError(
            f"{WS} {name!r} searched a {space.get('kind')!r} space ({space.get('name')}), "
            f"this search a {setup.space.kind!r} one ({setup.space.name}); their parameters "
            "describe different models: warm-start from a study of the same kind of space"
        )
    return source


def warm_start(
    setup: SearchSetup,
    study: optuna.Study,
    name: str,
    url: str | None = None,
    top: int = DEFAULT_TOP,
) -> WarmStart:
    """Seeds ``study`` (just created, empty) from the earlier study ``name``.

    Raises:
        SearchError: The earlier study cannot warm-start this search; nothing was
            written.
    """
    source = load_source(setup, name, url)
    best = best_trials(source, top=top)[:top]
    if not best:
        raise SearchError(
            f"{WS} {name!r} has no completed feasible trial to start from; "
            "name a study with results"
        )
    distributions = setup.space.distributions()
    transfer, no_transfer, differently = _transferable(setup, source, distributions)
    seeds: list[dict[str, Any]] = []
    skipped: list[str] = []
    queued: list[dict[str, Any]] = []
    added = [dict(t.params) for t, *_ in transfer]
    for trial in best:
        params, refits = refit_params(trial.params, distributions, setup)
        if params in added:
            skipped.append(f"trial {trial.number}: added as data (the same model, trained)")
            continue
        if params in queued:
            skipped.append(f"trial {trial.number}: the same parameters as an earlier seed")
            continue
        # the model these devices build from it, against the earlier one
        model = _models(trial, setup, params)
        same = _same_model(seeds, model, params)
        if same is not None:  # another seed trains it already: shown once, counted
            same["proposed"] += 1
            skipped.append(
                f"trial {trial.number}: builds the same model as trial {same['trial']} "
                f"({model['after']})"
            )
            continue
        queued.append(params)
        seeds.append(
            {
                "trial": trial.number,
                "params": params,
                "refits": refits,
                "model": model,
                "proposed": 1,  # source trials whose parameters build this model
            }
        )
    # a queued trial always runs: seeds past --trials would overshoot the run's budget
    trials = setup.config.trials
    skipped += [
        f"trial {seed['trial']}: past the {trials} trial(s) asked for (more trials train it too)"
        for seed in seeds[trials:]
    ]
    seeds = seeds[:trials]
    # data first: a trial added with ask/tell would otherwise take a queued seed
    for trial, candidate, plan, values in transfer:
        _add_transferred(study, setup, name, trial, candidate, plan, values, distributions)
    for seed in seeds:
        study.enqueue_trial(
            seed["params"],
            user_attrs={
                WARM_START_ATTR: {"study": name, "trial": seed["trial"], "refits": seed["refits"]}
            },
        )
    result = WarmStart(name, tuple(seeds), len(transfer), no_transfer, differently, tuple(skipped))
    update_study_info(study, WARM_START_ATTR, result.to_dict())
    return result


_TRAINING_PARAMS = ("batch_size", "lr", "lr_policy", "batch_policy")
"""Sampled parameters that change how a model trains (search/_run/trial.py)."""


def _same_model(
    seeds: Sequence[dict[str, Any]], model: Mapping[str, Any], params: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The seed already queued that these devices build into the same model as
    ``model``, trained alike (a warm start queues each model once)."""
    if model["after"] is None:
        return None
    training = {k: params.get(k) for k in _TRAINING_PARAMS}
    for seed in seeds:
        if seed["model"]["after"] == model["after"] and training == {
            k: seed["params"].get(k) for k in _TRAINING_PARAMS
        }:
            return seed
    return None


def refit_params(
    params: Mapping[str, Any],
    distributions: Mapping[str, BaseDistribution],
    setup: SearchSetup,
) -> tuple[dict[str, Any], list[str]]:
    """``params`` as the new study's distributions take them, and what changed."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out: dict[str, Any] = {}
    refits: list[str] = []
    for key in params:
        if key not in distributions:
            refits.append(f"{key}: not a parameter of this space; dropped")
    for key, dist in distributions.items():
        if key not in params:
            refits.append(f"{key}: new in this space; left to the sampler")
            continue
        value = params[key]
        if isinstance(dist, CategoricalDistribution):
            if value in dist.choices:
                out[key] = value
                continue
            nearest = _nearest_lane(value, dist.choices, setup)
            if nearest is None:
                refits.append(f"{key}: {value!r} is not a choice here; left to the sampler")
            else:
                out[key] = nearest
                why = (
                    "is no lane of this space"
                    if _outside_space(value, setup)
                    else ("does not fit these devices")
                )
                refits.append(f"{key}: {value} {why}; {nearest} instead")
        elif isinstance(dist, (FloatDistribution, IntDistribution)):
            number = float(value)
            clipped = min(max(number, dist.low), dist.high)
            if isinstance(dist, IntDistribution):
                step = dist.step or 1
                clipped = dist.low + round((clipped - dist.low) / step) * step
                clipped = int(min(clipped, dist.high))
            if not math.isclose(clipped, number):
                refits.append(f"{key}: {value} is outside {dist.low}..{dist.high}; {clipped}")
            out[key] = clipped
        else:  # pragma: no cover - spaces use the three kinds above
            refits.append(f"{key}: unsupported distribution; left to the sampler")
    return out, refits


def _outside_space(value: Any, setup: SearchSetup) -> bool:
    """Whether lane ``value`` lies outside the space's lane types, widths and depths
    (the space excludes it; otherwise the devices do)."""
    from nasmlcn.specs import parse_lanes

    lanes = getattr(setup.space, "all_lanes", None)
    try:
        (lane,) = parse_lanes(str(value))
    except Exception:
        return False
    return lanes is not None and lane not in lanes


def _nearest_lane(value: Any, choices: Sequence[Any], setup: SearchSetup) -> Any | None:
    """The dearest lane of ``choices`` that costs no more than lane ``value`` (the
    cheapest when none does); None when they are not lanes."""
    from nasmlcn.specs import parse_lanes

    ctx = setup.space_context.cost_context

    def cost(text: Any) -> float | None:
        try:
            (lane,) = parse_lanes(str(text))
        except Exception:
            return None
        return float(setup.cost_model.lane_cost(lane, ctx).time)

    wanted = cost(value)
    costs = [(cost(c), c) for c in choices]
    if wanted is None or any(c is None for c, _ in costs):
        return None
    known = [(c, choice) for c, choice in costs if c is not None]
    cheaper = [pair for pair in known if pair[0] <= wanted]
    return max(cheaper, key=lambda p: p[0])[1] if cheaper else min(known, key=lambda p: p[0])[1]


def _transferable(
    setup: SearchSetup, source: optuna.Study, distributions: Mapping[str, BaseDistribution]
) -> tuple[list[tuple[Any, Any, Any, list[float]]], str | None, int]:
    """The earlier trials to add as data (trial, candidate, plan, values), why none
    can be (None if some can), and how many were rebuilt differently."""
    from optuna.trial import TrialState

    source_record = StudyRecord.read(source)
    theirs = source_record.config
    ours = setup.config.to_dict()
    differing = [
        f"{f} {theirs.get(f)!r} (now {ours.get(f)!r})"
        for f in TRAINING_FIELDS
        if f != "dataset" and theirs.get(f) != ours.get(f)
    ]
    then, now = source_record.data, setup.dataset.identity
    if not then.same_data(now):  # by content: the same data at another path is the same
        differing.insert(0, f"data {then.describe()} (now {now.describe()})")
    if differing:
        return [], "trained differently: " + ", ".join(differing), 0
    their_objectives = list(source_record.objectives)
    out = []
    differently = 0
    for trial in source.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        if trial.distributions != dict(distributions):
            return [], "the parameters differ (another space, palette or objectives)", 0
        record = TrialRecord.of(trial)
        if record.values is None or not record.arch or record.transferred_from is not None:
            continue  # a transferred trial is not passed on again
        values: list[float] = []
        for objective in setup.objectives:
            if objective.needs_training:
                if objective.name not in their_objectives:
                    values = []
                    break
                values.append(record.values[their_objectives.index(objective.name)])
            else:
                values.append(math.nan)  # predicted below, for the new devices
        if not values:
            continue
        candidate, plan = _build(setup, trial.params)
        if candidate is None or candidate.spec.to_dict() != record.arch:
            differently += 1
            continue
        values = [
            float(o.value(plan, None)) if not o.needs_training else v
            for o, v in zip(setup.objectives, values, strict=True)
        ]
        out.append((trial, candidate, plan, values))
    if not out:
        why = (
            "the new devices build every earlier model differently"
            if differently
            else "no completed trial"
        )
        return [], why, differently
    return out, None, differently


def _models(trial: FrozenTrial, setup: SearchSetup, params: Mapping[str, Any]) -> dict[str, Any]:
    """The earlier trial's model and the one the new study builds from ``params``
    (None: none fits yet, the sampler may fill in parameters the space added): their
    lanes and lane counts, and whether they differ (``rebuilt``)."""
    from nasmlcn.specs import arch_from_dict

    before = arch_from_dict(TrialRecord.of(trial).arch) if TrialRecord.of(trial).arch else None
    candidate, _ = _build(setup, params)
    after = None if candidate is None else candidate.spec
    return {
        "before": None if before is None else before.describe(),
        "after": None if after is None else after.describe(),
        "lanes_before": getattr(before, "num_lanes", None),
        "lanes_after": getattr(after, "num_lanes", None),
        "rebuilt": after is not None and (before is None or after.to_dict() != before.to_dict()),
    }


def _build(setup: SearchSetup, params: Mapping[str, Any]) -> tuple[Any, Any]:
    """The candidate and plan the new study builds from ``params`` (None, None when
    it cannot or the model does not fit)."""
    try:
        candidate, plan = build_and_place(setup, params)
    except Exception:
        return None, None
    return (candidate, plan) if candidate.feasible else (None, None)


def _add_transferred(
    study: optuna.Study,
    setup: SearchSetup,
    name: str,
    trial: Any,
    candidate: Any,
    plan: Any,
    values: list[float],
    distributions: Mapping[str, BaseDistribution],
) -> None:
    """Adds one earlier trial as a completed trial, through ask and tell so that it is
    recorded like any trial (model, plan on the new devices, training, constraints)."""
    study.enqueue_trial(dict(trial.params))
    new = study.ask()
    suggest_all(new, distributions)
    record = TrialRecord.of(trial)
    write_transferred(new, name, trial.number)
    write_candidate(new, setup, candidate, plan)
    accuracy = record.training.get("accuracy")
    if accuracy is None and record.accuracy_per_epoch:
        accuracy = record.accuracy_per_epoch[-1]
    write_training(
        new,
        {**record.training},
        learning_constraint(float(accuracy or 0.0), setup.dataset.num_classes),
    )
    study.tell(new, values)
