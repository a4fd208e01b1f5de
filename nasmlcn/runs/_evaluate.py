"""Evaluating a trained run: test accuracy and loss, and inference throughput.

The loss is the model's own training loss (margin loss plus the weighted
reconstruction error where the model has a decoder), computed by the trainer's
:func:`nasmlcn.training.evaluate` exactly as ``nasmlcn train`` tests. Inference
throughput is measured by :func:`nasmlcn.measure.time_inference` on the
decoder-free classifier (:mod:`nasmlcn.runs._classifier`): eval mode, no
gradients, ``inference_batch`` test images per pass, the median of ``passes``
timed passes after ``warmup`` untimed ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasmlcn.runs._load import LoadedRun, run_summary

if TYPE_CHECKING:
    import torch

    from nasmlcn.data import DataSplits
    from nasmlcn.measure import InferenceTiming
    from nasmlcn.specs import ArchSpec

INFERENCE_BATCH = 100
"""Images per timed pass: a throughput figure, unlike the batch-1 latency the
search's ``inference`` objective measures."""

INFERENCE_PASSES = 10
"""Timed passes (the median is reported)."""

INFERENCE_WARMUP = 2
"""Untimed passes before them."""

Phase = Callable[[str], None]
"""Told the name of each phase as it starts (``loading data``, ``testing``, ...)."""


@dataclass(frozen=True)
class InferenceSettings:
    """How inference throughput is timed (see the module docstring)."""

    batch: int = INFERENCE_BATCH
    passes: int = INFERENCE_PASSES
    warmup: int = INFERENCE_WARMUP


@dataclass(frozen=True)
class RunEvaluation:
    """What ``nasmlcn evaluate`` reports; ``to_dict`` is its ``--json``."""

    run: LoadedRun
    params: int
    test_images: int
    test_accuracy: float
    test_loss: float
    device: str
    inference: InferenceTiming
    per_class: tuple[ClassAccuracy, ...] = ()

    @property
    def images_per_second(self) -> float:
        return 1.0 / self.inference.seconds_per_image

    def to_dict(self) -> dict[str, Any]:
        return {
            **run_summary(self.run),
            "params": self.params,
            "test_images": self.test_images,
            "test_accuracy": self.test_accuracy,
            "test_loss": self.test_loss,
            "inference_images_per_second": self.images_per_second,
            "inference": self.inference.to_dict(),
            "device": self.device,
            "per_class": [c.to_dict() for c in self.per_class],
        }


@dataclass(frozen=True)
class ClassAccuracy:
    """The test images of one class and the share of them classified right."""

    name: str
    images: int
    correct: int

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.images if self.images else None

    def to_dict(self) -> dict[str, Any]:
        return {"class": self.name, "images": self.images, "accuracy": self.accuracy}


class _PerClass:
    """An evaluation step that also counts each class's test images and hits (on the
    step's device: no read-back per batch)."""

    def __init__(self, step: Callable[..., Any], classes: int) -> None:
        self.step = step
        self.classes = classes
        self.counts: torch.Tensor | None = None  # (K,) int64
        self.hits: torch.Tensor | None = None  # (K,) int64

    def __call__(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        import torch

        loss, lengths = self.step(x, y)
        right = lengths.argmax(dim=1) == y  # (B,)
        counts = torch.bincount(y, minlength=self.classes)  # (K,)
        hits = torch.bincount(y[right], minlength=self.classes)  # (K,)
        self.counts = counts if self.counts is None else self.counts + counts
        self.hits = hits if self.hits is None else self.hits + hits
        return loss, lengths

    def read(self, names: tuple[str, ...]) -> tuple[ClassAccuracy, ...]:
        if self.counts is None or self.hits is None:
            return ()
        counts, hits = self.counts.tolist(), self.hits.tolist()
        return tuple(
            ClassAccuracy(n, int(c), int(h)) for n, c, h in zip(names, counts, hits, strict=False)
        )


def load_run_splits(
    run: LoadedRun,
    data_dir: str | Path | None,
    *,
    download: bool = True,
    val_limit: int | None = None,
    test_limit: int | None = None,
) -> DataSplits:
    """The run's dataset split as it trained (its seed, 10 % validation); the
    training split is cut to one image, nothing here reads it."""
    from nasmlcn.data import load_splits

    assert run.data is not None, "load_run(..., require_dataset=True) gives a dataset"
    return load_splits(
        run.data,
        data_dir,
        download=download,
        seed=run.seed,
        train_limit=1,
        val_limit=val_limit,
        test_limit=test_limit,
    )


def time_classifier(
    model: torch.nn.Module,
    arch: ArchSpec,
    images: torch.Tensor,
    device: torch.device,
    settings: InferenceSettings,
) -> InferenceTiming:
    """Times ``model`` (built from ``arch``) classifying ``images`` on ``device``."""
    from nasmlcn.measure import time_inference
    from nasmlcn.runs._classifier import classifier

    return time_inference(
        classifier(model, arch),
        images,
        input_device=device,
        batch_size=settings.batch,
        passes=settings.passes,
        warmup=settings.warmup,
    )


def evaluate_run(
    run: LoadedRun,
    *,
    data_dir: str | Path | None = None,
    download: bool = True,
    test_limit: int | None = None,
    device: str = "auto",
    batch_size: int = 500,
    inference: InferenceSettings | None = None,
    on_phase: Phase | None = None,
) -> RunEvaluation:
    """Tests ``run``'s model on its dataset's test split and times its inference.

    Args:
        run: From :func:`~nasmlcn.runs.load_run`.
        data_dir: Where datasets live (None: the default).
        download: Allow downloading missing data.
        test_limit: Use the first N test images.
        device: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.
        batch_size: Images per test batch.
        inference: How throughput is timed.
        on_phase: Told each phase as it starts.

    Raises:
        DatasetError: The data is missing and cannot be downloaded.
        TrainingError: ``device`` is unknown or absent.
    """
    from nasmlcn.models import count_parameters
    from nasmlcn.training import EvalStep, evaluate, resolve_device

    tell = on_phase or (lambda _: None)
    where = resolve_device(device)
    tell("loading data")
    splits = load_run_splits(run, data_dir, download=download, test_limit=test_limit)
    model = run.model.to(where)
    tell("testing")
    counting = _PerClass(
        EvalStep(model, splits.test.inputs, run.reconstruction_weight), run.arch.num_classes
    )
    loss, accuracy = evaluate(
        model,
        splits.test,
        batch_size=batch_size,
        device=where,
        reconstruction_weight=run.reconstruction_weight,
        step=counting,
    )
    settings = inference or InferenceSettings()
    tell("timing inference")
    timing = time_classifier(
        model, run.arch, splits.test.first_inputs(settings.batch), where, settings
    )
    return RunEvaluation(
        run=run,
        params=count_parameters(model),
        test_images=len(splits.test),
        test_accuracy=accuracy,
        test_loss=loss,
        device=str(where),
        inference=timing,
        per_class=counting.read(run.data.class_names if run.data is not None else ()),
    )
