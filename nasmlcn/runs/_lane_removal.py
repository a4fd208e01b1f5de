"""Lane pruning of a trained MLCN (thesis sec. 4.3.3, Fig. 4.6).

A lane's importance is the validation accuracy lost when it alone is removed
from the trained model. Lanes are then removed from the least to the most
important, one at a time, and after each removal the validation accuracy and the
measured inference throughput of the smaller model are reported.

Removing lanes is exact, not an approximation: class capsule ``k`` is
``(lane_1[k], ..., lane_L[k])`` and its length is the class probability, so the
model without lane ``l`` is the model whose class capsules lack dimension ``l``
(at inference there is no lane-dropout rescaling). The accuracies are therefore
computed from the lanes' validation outputs, computed once; the pruned models
themselves are built (:func:`select_lanes`: fewer lanes, the kept lanes' weights,
the decoder's inputs of the removed lanes cut) and timed, forward only, by
:func:`nasmlcn.measure.time_inference`, each right after the full model is timed
again: a step's speedup is the ratio of two timings under the same load. (Timed
once at the start instead, on the shared 2-core machine whose load fell from 8.7
to 1.3 during a run, the 1-lane model of 16 came out 27x faster than all 16.) A test checks that a built pruned model
classifies exactly as the accuracy computation says.

Removing the last lane is not a model; the steps go from 0 lanes removed to
``L - 1``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from nasmlcn.errors import CheckpointError, SpecError, option
from nasmlcn.models import MLCN, build_model, count_parameters
from nasmlcn.runs._evaluate import (
    InferenceSettings,
    load_run_splits,
    time_classifier,
)
from nasmlcn.runs._load import LoadedRun, run_summary
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import (
    ARCH_NAME,
    CHECKPOINT_NAME,
    check_free_run_folder,
    write_run_folder,
)
from nasmlcn.training import check_out_dir as check_folder

if TYPE_CHECKING:
    from nasmlcn.data import Split
    from nasmlcn.measure import InferenceTiming

logger = logging.getLogger(__name__)

LANE_REMOVAL_REPORT = "prune.json"
FIGURE_NAME = "lane_pruning"
REPORT_FILES = (LANE_REMOVAL_REPORT, f"{FIGURE_NAME}.html", f"{FIGURE_NAME}.png")
"""What a lane removal writes into its ``--out`` beside a kept model: the report and
its figure (:func:`~nasmlcn.runs.write_lane_removal_figure`)."""

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``: ``lane outputs`` (validation batches), then
``timing`` (pruning steps)."""


@dataclass(frozen=True)
class LaneRemovalStep:
    """The model after removing ``removed_lanes`` (original lane numbers, 0-based).

    Attributes:
        removed_lanes: Every lane removed so far, in removal order.
        removed: The lane this step removed (None at step 0, the full model).
        lanes: The remaining lanes in the compact syntax.
        params: Trainable parameters of the pruned model (decoder included).
        accuracy: Validation accuracy.
        inference_images_per_second: Measured inference throughput.
        full_images_per_second: The full model's, timed right before.
        speedup: ``inference_images_per_second / full_images_per_second`` (1 at
            step 0, where both are the same timing).
    """

    removed_lanes: tuple[int, ...]
    removed: int | None
    lanes: str
    params: int
    accuracy: float
    inference_images_per_second: float
    full_images_per_second: float
    speedup: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "removed_lanes": list(self.removed_lanes),
            "removed": self.removed,
            "lanes": self.lanes,
            "params": self.params,
            "accuracy": self.accuracy,
            "inference_images_per_second": self.inference_images_per_second,
            "full_images_per_second": self.full_images_per_second,
            "speedup": self.speedup,
        }


@dataclass(frozen=True)
class LaneRemovalReport:
    """What ``nasmlcn prune`` reports; ``to_dict`` is its ``--json``.

    Attributes:
        run: The pruned run.
        images: Validation images the accuracies rest on.
        importance: Per lane, the validation accuracy lost when it alone is removed.
        order: Every lane, least important first (the last is never removed).
        steps: Step ``i`` has ``i`` lanes removed.
        inference: How throughput was timed.
        device: Where the models ran.
        threads: Torch intra-op threads during the timing.
        load_average: The highest 1-minute load average seen while timing.
        machine_load: The most cores other processes held while it timed
            (:func:`nasmlcn.hardware.busy_record`); None: not looked at.
    """

    run: LoadedRun
    images: int
    importance: tuple[float, ...]
    order: tuple[int, ...]
    steps: tuple[LaneRemovalStep, ...]
    inference: InferenceSettings
    device: str
    threads: int
    load_average: float | None
    machine_load: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **run_summary(self.run),
            "split": "validation",
            "images": self.images,
            "importance": list(self.importance),
            "order": list(self.order),
            "steps": [s.to_dict() for s in self.steps],
            "inference": {
                "batch_size": self.inference.batch,
                "passes": self.inference.passes,
                "warmup": self.inference.warmup,
                "device": self.device,
                "threads": self.threads,
                "load_average": self.load_average,
                "machine_load": self.machine_load,
            },
        }


def select_lanes(model: MLCN, keep: Sequence[int]) -> MLCN:
    """A smaller MLCN of the lanes ``keep`` (in that order) of ``model``, with their
    weights; the decoder reads only the kept lanes' dimensions.

    The decoder's first layer reads the class capsules flattened class-major
    (``full``: input ``k * L + l``; ``reduced``: input ``l``), see
    :class:`~nasmlcn.models.Decoder`; its columns of removed lanes are dropped,
    which is what zeroing those lanes would do.

    Raises:
        SpecError: ``keep`` is empty, repeats a lane or names one that does not exist.
    """
    spec = model.spec
    lanes = list(keep)
    if (
        not lanes
        or len(set(lanes)) != len(lanes)
        or not all(0 <= i < spec.num_lanes for i in lanes)
    ):
        raise SpecError(f"keep lanes {lanes}: need distinct lanes of 0-{spec.num_lanes - 1}")
    pruned = build_model(spec_without_lanes(spec, lanes))
    state = {}
    lane_state = model.lanes.state_dict()  # "3.weight": lane 3's own tensors
    for new, old in enumerate(lanes):
        prefix = f"{old}."
        for key, value in lane_state.items():
            if key.startswith(prefix):
                state[f"lanes.{new}.{key[len(prefix) :]}"] = value
    head = model.capsule_head.state_dict()
    decoder = model.capsule_head.decoder
    if decoder is not None:
        first = head["decoder.layers.0.weight"]  # (512, K*L) full, (512, L) reduced
        index = torch.tensor(lanes, device=first.device)
        if decoder.kind == "full":
            k = spec.num_classes
            first = first.view(first.shape[0], k, spec.num_lanes)  # (512, K, L)
            first = first.index_select(2, index).reshape(first.shape[0], k * len(lanes))
        else:
            first = first.index_select(1, index)  # (512, L')
        head["decoder.layers.0.weight"] = first
    state.update({f"capsule_head.{key}": value for key, value in head.items()})
    pruned.load_state_dict(state)
    return pruned.to(next(model.parameters()).device).train(model.training)


@torch.no_grad()
def lane_outputs(
    model: MLCN,
    split: Split,
    *,
    batch_size: int,
    device: torch.device,
    progress: Progress | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Every lane's output on ``split``: ``(N, K, L)`` class capsules and ``(N,)`` labels."""
    model.eval()
    total = -(-len(split) // batch_size)
    capsules, labels = [], []
    for i, (x, y) in enumerate(split.batches(batch_size)):
        lanes = model.lane_outputs(split.inputs(x).to(device))  # L x (B, K)
        capsules.append(torch.stack(lanes, dim=-1).cpu())  # (B, K, L)
        labels.append(y)
        if progress is not None:
            progress("lane outputs", i + 1, total)
    return torch.cat(capsules), torch.cat(labels)


def subset_accuracy(capsules: torch.Tensor, labels: torch.Tensor, lanes: Sequence[int]) -> float:
    """Accuracy of the model of ``lanes`` alone, from all lanes' ``(N, K, L)`` outputs."""
    lengths = torch.linalg.vector_norm(capsules[:, :, list(lanes)], dim=-1)  # (N, K)
    return float((lengths.argmax(dim=1) == labels).double().mean())


def lane_importance(capsules: torch.Tensor, labels: torch.Tensor) -> list[float]:
    """Per lane, the accuracy lost when it alone is removed (may be negative)."""
    lanes = list(range(capsules.shape[-1]))
    full = subset_accuracy(capsules, labels, lanes)
    return [full - subset_accuracy(capsules, labels, lanes[:i] + lanes[i + 1 :]) for i in lanes]


def removal_order(importance: Sequence[float]) -> list[int]:
    """Lanes from the least to the most important (ties: lower lane first)."""
    return sorted(range(len(importance)), key=lambda i: (importance[i], i))


def check_removable(run: LoadedRun, keep: int | None = None) -> MLCN:
    """``run``'s model, which must be an MLCN (of at least two lanes), and ``keep``
    a possible lane count.

    Raises:
        SpecError: A CapsNet, one lane, or ``keep`` outside 1-L.
    """
    model = run.model
    if not isinstance(model, MLCN):
        raise SpecError(
            f"run {str(run.path)!r} is a {run.arch.kind} model; lane pruning needs an MLCN"
        )
    lanes = model.spec.num_lanes
    if lanes < 2:
        raise SpecError(f"run {str(run.path)!r} has a single lane; nothing to prune")
    if keep is not None and not 1 <= keep <= lanes:
        raise SpecError(f"{option('keep')} {keep}: the run has {lanes} lanes; keep 1 to {lanes}")
    return model


def remove_lanes(
    run: LoadedRun,
    *,
    data_dir: str | Path | None = None,
    download: bool = True,
    val_limit: int | None = None,
    device: str = "auto",
    batch_size: int = 500,
    inference: InferenceSettings | None = None,
    progress: Progress | None = None,
) -> LaneRemovalReport:
    """Ranks ``run``'s lanes by importance and removes them one by one (see the
    module docstring).

    Args:
        run: A run of an MLCN, from :func:`~nasmlcn.runs.load_run`.
        data_dir: Where datasets live (None: the default).
        download: Allow downloading missing data.
        val_limit: Use the first N validation images.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        batch_size: Images per batch of the lane outputs.
        inference: How throughput is timed.
        progress: Told the progress of each phase.

    Raises:
        SpecError: Not an MLCN, or a single lane.
        DatasetError: The data is missing and cannot be downloaded.
    """
    from nasmlcn.training import resolve_device

    model = check_removable(run)
    where = resolve_device(device)
    settings = inference or InferenceSettings()
    splits = load_run_splits(run, data_dir, download=download, val_limit=val_limit)
    model.to(where)
    capsules, labels = lane_outputs(
        model, splits.val, batch_size=batch_size, device=where, progress=progress
    )
    importance = lane_importance(capsules, labels)
    order = removal_order(importance)
    images = splits.val.first_inputs(settings.batch)
    total = model.spec.num_lanes
    steps: list[LaneRemovalStep] = []
    loads: list[float] = []
    held: list[dict[str, Any]] = []
    threads = torch.get_num_threads()
    for removed in range(total):
        gone = tuple(order[:removed])
        kept = [i for i in range(total) if i not in gone]
        pruned = model if not gone else select_lanes(model, kept)
        # The full model is timed next to every pruned one: the speedup is a ratio
        # of two timings taken under the same load, however the load drifts.
        timed = [model] if pruned is model else [model, pruned]
        timings = [time_classifier(m, m.spec, images, where, settings) for m in timed]
        loads += [t.load_average for t in timings if t.load_average is not None]
        held += [t.machine_load for t in timings if t.machine_load is not None]
        threads = timings[-1].threads
        step = _removal_step(gone, pruned, timings, subset_accuracy(capsules, labels, kept))
        steps.append(step)
        logger.info(
            "removed %d lanes: accuracy %.4f, %.0f images/s",
            removed,
            step.accuracy,
            step.inference_images_per_second,
        )
        if progress is not None:
            progress("timing", removed + 1, total)
    return LaneRemovalReport(
        run=run,
        images=len(labels),
        importance=tuple(importance),
        order=tuple(order),
        steps=tuple(steps),
        inference=settings,
        device=str(where),
        threads=threads,
        load_average=max(loads) if loads else None,
        machine_load=max(held, key=lambda r: r["others_busy_cores"] or 0.0) if held else None,
    )


def _removal_step(
    gone: tuple[int, ...], pruned: MLCN, timings: list[InferenceTiming], accuracy: float
) -> LaneRemovalStep:
    """The step that removed the lanes ``gone``, leaving ``pruned``; ``timings``: the
    full model's and then (when it is not the full model) ``pruned``'s."""
    baseline, rate = (1.0 / t.seconds_per_image for t in (timings[0], timings[-1]))
    return LaneRemovalStep(
        removed_lanes=gone,
        removed=gone[-1] if gone else None,
        lanes=pruned.spec.describe(),
        params=count_parameters(pruned),
        accuracy=accuracy,
        inference_images_per_second=rate,
        full_images_per_second=baseline,
        speedup=rate / baseline,
    )


def kept_lanes(report: LaneRemovalReport, keep: int) -> list[int]:
    """The ``keep`` most important lanes, in their original order."""
    total = len(report.importance)
    gone = set(report.order[: total - keep])
    return [i for i in range(total) if i not in gone]


def save_without_lanes(report: LaneRemovalReport, keep: int, out_dir: Path) -> Path:
    """Writes the model of ``report``'s ``keep`` most important lanes into
    ``out_dir`` as a run folder (``checkpoint.pt``, ``arch.json``) that
    ``nasmlcn evaluate`` and ``nasmlcn train --arch OUT/arch.json --out OUT
    --resume`` (fine-tuning from epoch 1, under any schedule) read; both files
    are put in place together (:func:`~nasmlcn.training._run_folder.write_run_folder`).

    The checkpoint has epoch 0, no optimizer state and a ``train_config`` naming
    only the dataset (its name or path, resize and identity), the split seed, the
    reconstruction weight and the inputs' normalisation, so a resumed training
    starts afresh from the pruned weights on the same split.

    Raises:
        CheckpointError: ``out_dir`` already holds a model, is a file or cannot
            be written.
    """
    from nasmlcn.specs import save_arch
    from nasmlcn.training import save_checkpoint

    model = check_removable(report.run, keep)
    pruned = select_lanes(model, kept_lanes(report, keep)).cpu()

    def write(folder: Path) -> None:
        save_checkpoint(
            folder / CHECKPOINT_NAME,
            arch=pruned.spec,
            model=pruned,
            epoch=0,
            train_config={
                "dataset": report.run.dataset,
                **_identity(report.run),
                "seed": report.run.seed,
                "reconstruction_weight": report.run.reconstruction_weight,
                "normalization": report.run.train_config.get("normalization"),
            },
        )
        save_arch(pruned.spec, folder / ARCH_NAME)

    write_run_folder(out_dir, write, option="--out")
    return out_dir / CHECKPOINT_NAME


def _identity(run: LoadedRun) -> dict[str, Any]:
    """What the pruned run records of its data: the resize and the identity."""
    if run.data is None:
        return {}
    identity = run.data.identity
    return {"image_size": identity.image_size, "dataset_identity": identity.to_dict()}


def check_removal_out_dir(out_dir: Path, *, keep: bool, replace: bool = False) -> None:
    """``out_dir`` can take prune's files: a folder that can be made and written
    (see :func:`nasmlcn.training.check_out_dir`), holding no earlier removal's report
    (:data:`REPORT_FILES`) unless ``replace`` and, for a ``keep`` model, no model yet.
    Checked before any work.

    Raises:
        CheckpointError: Naming what is in the way.
    """
    if keep:
        check_free_run_folder(out_dir, "--out")
    else:
        check_folder(out_dir)
    earlier = [name for name in REPORT_FILES if (out_dir / name).exists()]
    if earlier and not replace:
        raise CheckpointError(
            f"{option('out_dir')} {str(out_dir)!r} already holds a lane removal's report "
            f"({', '.join(earlier)}); choose a new folder for {option('out_dir')}, or "
            f"{option('replace')} to write over it"
        )


def spec_without_lanes(spec: MLCNSpec, keep: Sequence[int]) -> MLCNSpec:
    """The architecture of :func:`select_lanes`."""
    return replace(spec, lanes=tuple(spec.lanes[i] for i in keep))
