"""Turning a SearchConfig into everything a search needs, validated up front.

Every user error (unknown device, space, sampler, objective, dataset, a bad
memory size, a space that fits nothing) is raised here, before the storage is
touched, so bad input never creates or changes a study.

A search checked and built (:class:`SearchSetup`): its configuration and the objects
made from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from nasmlcn.costs import CostContext, LaneCost, get_cost_model
from nasmlcn.data import images_too_small_hint, open_dataset
from nasmlcn.errors import SearchError, nested, option
from nasmlcn.hardware import load_catalog, parse_devices
from nasmlcn.planning import parse_flops
from nasmlcn.search._config import SearchConfig
from nasmlcn.search.evaluators._base import EVALUATORS
from nasmlcn.search.objectives._base import OBJECTIVES
from nasmlcn.search.pruners._base import PRUNERS
from nasmlcn.search.samplers._base import SAMPLERS
from nasmlcn.search.spaces import SpaceContext, load_space

if TYPE_CHECKING:
    from nasmlcn.costs import CostModel
    from nasmlcn.data import DatasetInfo
    from nasmlcn.hardware import Catalog, DeviceSpec
    from nasmlcn.planning import FlopsLimit
    from nasmlcn.search.objectives._base import Objective
    from nasmlcn.search.spaces import SearchSpace


@dataclass(frozen=True)
class SearchSetup:
    """A validated search: the config and the objects built from it."""

    config: SearchConfig
    devices: tuple[DeviceSpec, ...]
    flops: FlopsLimit
    space: SearchSpace
    cost_model: CostModel
    objectives: tuple[Objective, ...]
    dataset: DatasetInfo
    space_context: SpaceContext
    notices: tuple[str, ...] = ()  # what the user should know before the first trial

    @property
    def directions(self) -> list[str]:
        return [o.direction for o in self.objectives]

    @property
    def metric_names(self) -> list[str]:
        return [o.metric for o in self.objectives]

    @property
    def needs_training(self) -> bool:
        return any(o.needs_training for o in self.objectives)


MAX_HEAD_LANES = 256
"""Lanes the head device's memory reservation is sized for."""


def with_devices_cost_model(config: SearchConfig) -> SearchConfig:
    """``config`` with the target devices' own cost model (CapsAcc devices have
    ``capsacc``), checked against its objectives; what a study's identity holds.

    Raises:
        SearchError: The devices mix cost models, ``cost_model`` names another, or
            an objective needs a cost model the devices do not have.
    """
    from nasmlcn.costs import devices_cost_model
    from nasmlcn.search.objectives._base import check_cost_model

    cost_model = devices_cost_model(config.devices, config.cost_model, config.device_file)
    check_cost_model(config.objectives, cost_model)
    return config if cost_model == config.cost_model else replace(config, cost_model=cost_model)


def setup_search(config: SearchConfig) -> SearchSetup:
    """Validates ``config`` and builds the search's parts (``setup.config`` is
    ``config`` with the devices' own cost model, :func:`with_devices_cost_model`).

    Raises:
        NasmlcnError: Any invalid part, with a one-line message.
    """
    catalog = load_catalog(config.device_file)  # read here, not when a config is made
    config = with_devices_cost_model(config)
    devices = parse_devices(config.devices, mem=config.mem, catalog=catalog)
    flops = parse_flops(config.flops)
    objectives = tuple(OBJECTIVES.get(name) for name in config.objectives)
    SAMPLERS.get(config.sampler)
    PRUNERS.get(config.pruner)
    EVALUATORS.get(config.evaluator)
    # its shape and classes shape every model; a user's images are read (once) here
    dataset = open_dataset(config.dataset, image_size=config.image_size, data_dir=config.data_dir)
    config, limited = within_the_data(config, dataset)
    notices = (*memory_above_catalog(config, devices, catalog), *limited)
    space = load_space(config.space)
    options = {"calibration_file": config.calibration} if config.calibration else {}
    if config.calibration and config.cost_model != "calibrated":
        raise SearchError(
            f"calibration applies to cost model 'calibrated', not {config.cost_model!r}"
        )
    cost_model = get_cost_model(config.cost_model, **options)
    ctx = CostContext(
        input_shape=dataset.input_shape,
        num_classes=dataset.num_classes,
        routing=space.routing,
        decoder=space.decoder,
        batch_size=config.batch_size,
    )
    head = cost_model.head_cost(MAX_HEAD_LANES, ctx).memory_bytes
    rewards_cost = config.latency_budget is not None or any(
        o.direction == "minimize" for o in objectives
    )
    space_context = SpaceContext(devices, cost_model, ctx, flops, (head,), rewards_cost)
    setup = SearchSetup(
        config, devices, flops, space, cost_model, objectives, dataset, space_context, notices
    )
    with images_too_small_hint(dataset):
        _check_some_lane_fits(setup)
        space.prepare(space_context)  # its choices for these devices (fixed for the study)
    _check_run_on(config.run_on)
    _check_data(setup)
    _check_artifacts(config)
    return setup


def within_the_data(config: SearchConfig, dataset: DatasetInfo) -> tuple[SearchConfig, list[str]]:
    """``config`` with a ‹train_limit› or ‹val_limit› above the images its split has
    lowered to them (the study stores what the trials use, and a run that asks the
    same again continues it), and a line for each it lowered."""
    sizes = dataset.split_sizes()
    if sizes is None:
        return config, []
    lowered: dict[str, Any] = {}
    notices: list[str] = []
    splits = zip(("train_limit", "val_limit"), sizes, ("training", "validation"), strict=True)
    for name, have, split in splits:
        asked = getattr(config, name)
        if asked is not None and asked > have:
            lowered[name] = have
            notices.append(
                f"{option(name)} {asked:,} is above the {have:,} images of {dataset.name}'s "
                f"{split} split: the trials use {have:,}, and the study stores {have:,}"
            )
    return (replace(config, **lowered) if lowered else config), notices


def memory_above_catalog(
    config: SearchConfig, devices: Sequence[DeviceSpec], catalog: Catalog
) -> list[str]:
    """A line for each device kind that ‹mem› gives more memory than the device
    catalog says it has: planned for as asked (a what-if may be meant), said aloud."""
    from nasmlcn.hardware import format_bytes

    notices = []
    for kind in dict.fromkeys(d.kind for d in devices):
        given = next(d.memory_bytes for d in devices if d.kind == kind)
        has = catalog[kind].memory_bytes
        if given > has:
            notices.append(
                f"{option('mem')} {config.mem} is above the {format_bytes(has)} of a {kind} in "
                f"the device catalog: the search plans for {format_bytes(given)} a device, as "
                f"asked (leave {option('mem')} out for the catalog's)"
            )
    return notices


def _check_artifacts(config: SearchConfig) -> None:
    """The trials' weights folder can be made, before the study is written."""
    from nasmlcn.search.evaluators._base import EVALUATORS
    from nasmlcn.study import artifacts_dir

    if not config.storage or not EVALUATORS.get(config.evaluator).checkpoints:
        return
    folder = artifacts_dir(config.storage, config.artifacts)
    for place in (folder, *folder.parents):
        if place.exists() and not place.is_dir():
            raise SearchError(
                f"‹artifacts›: cannot create {str(folder)!r}: {str(place)!r} is a file"
            )


def _check_some_lane_fits(setup: SearchSetup) -> None:
    """The smallest lane there is (width 1, depth 1, at the smallest batch size the
    search uses) fits the largest target device; else every trial would fail."""
    from nasmlcn.hardware import format_bytes

    ctx = setup.space_context.cost_context
    batches = setup.space.training.get("batch_size", (ctx.batch_size,))
    ctx = replace(ctx, batch_size=min(batches))
    smallest = _smallest_lane(setup, ctx)
    largest = max(setup.devices, key=lambda d: d.memory_bytes)
    if smallest.memory_bytes > largest.memory_bytes:
        raise SearchError(
            f"no model fits the target devices: the smallest lane ({smallest.lane}) needs "
            f"about {format_bytes(smallest.memory_bytes)} to train at batch {ctx.batch_size}, "
            f"the largest device ({largest.kind}) has {format_bytes(largest.memory_bytes)}; "
            + _what_fits(setup, ctx, largest.memory_bytes)
        )


SMALLER_IMAGES = (64, 32, 28)
"""The image sizes a refusal suggests for a user's images too large to train on, the
largest that fits first: capsule networks are trained on 28 to 64 pixels (MNIST,
CIFAR-10, smallNORB's crops), and a size where only the smallest lane fits would
leave the search no models to combine."""


def _what_fits(setup: SearchSetup, ctx: CostContext, room: int) -> str:
    """What to change when no lane fits ``room`` bytes: for a user's own images,
    ‹image_size› first (the usual cause: photos read at full size), then memory."""
    memory = "raise ‹mem› or lower ‹batch_size›"
    own = setup.dataset.own
    c, h, w = ctx.input_shape
    if own is None:  # a built-in's images are as small as they come
        return memory
    sides = [n for n in SMALLER_IMAGES if n * n < h * w]
    side = next((n for n in sides if _fits(setup, replace(ctx, input_shape=(c, n, n)), room)), None)
    if side is None:
        return memory
    if setup.config.image_size is not None:
        return (
            f"lower {option('image_size')} to {side} (it resizes the images of {own.name!r} "
            f"to {c}x{h}x{w}, CxHxW), or {memory}"
        )
    return (
        f"pass {option('image_size')} {side} to resize your images (those of {own.name!r} "
        f"are {c}x{h}x{w}, CxHxW), or {memory}"
    )


def _smallest_lane(setup: SearchSetup, ctx: CostContext) -> LaneCost:
    """The cost of the lane of least memory in ``ctx``."""
    from nasmlcn.specs import LANE_TYPES, LaneSpec

    return min(
        (setup.cost_model.lane_cost(LaneSpec(t, 1, 1), ctx) for t in LANE_TYPES.names()),
        key=lambda c: c.memory_bytes,
    )


def _fits(setup: SearchSetup, ctx: CostContext, room: int) -> bool:
    """Whether the smallest lane fits ``room`` bytes in ``ctx`` (one too small for the
    images does not)."""
    from nasmlcn.errors import SpecError

    try:
        return bool(_smallest_lane(setup, ctx).memory_bytes <= room)
    except SpecError:
        return False


def _check_run_on(run_on: str) -> None:
    """``--run-on`` is well-formed and names devices this machine has."""
    from nasmlcn.errors import DeviceError, TrainingError
    from nasmlcn.parallel import parse_run_on

    try:
        names = parse_run_on(run_on)
    except DeviceError as err:
        raise SearchError(f"‹run_on› {nested(err)}") from None
    for name in names:
        if name not in ("auto", "cpu"):
            from nasmlcn.training import resolve_device

            try:
                resolve_device(name)
            except TrainingError as err:
                raise SearchError(f"‹run_on› {run_on!r}: {nested(err)}") from None


def _check_data(setup: SearchSetup) -> None:
    """The data is there when trials train on it (a given data directory was found
    to exist, whatever the evaluator, when the dataset was opened).

    Runs last: preparing may unpack Debian's copy into the data directory, which
    should only happen once everything else is known to be valid.
    """
    trains = EVALUATORS.get(setup.config.evaluator).measured
    if trains and setup.needs_training:
        setup.dataset.prepare(setup.dataset.data_folder(), True)
