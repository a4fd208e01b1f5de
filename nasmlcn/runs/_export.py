"""Exporting a trained run for inference, checked against the model it came from.

:func:`export_run` writes the run's decoder-free classifier in a registered
format (:data:`~nasmlcn.runs.EXPORT_FORMATS`), loads the file back and compares
its outputs with the original model's on a batch of ``check_batch`` images of a
size other than the traced batch (so a batch size baked into the file is
caught). Without given images, the check uses seeded uniform [0, 1] images of
the model's input shape.

Beside the file, ``<file>.json`` (:func:`preprocessing`) says what the model takes
and gives: the input shape, how pixels become its input (scaled to [0, 1], then
the normalisation it trained with, if any), the resize its data had, and the class
names in the order of its outputs. A deployment needs nothing else from nasmlcn.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from nasmlcn._io import atomic_path
from nasmlcn.errors import ExportError
from nasmlcn.runs._classifier import classifier
from nasmlcn.runs._formats import INPUT_NAME, OUTPUT_NAMES, Outputs, export_format
from nasmlcn.runs._load import LoadedRun, run_summary

TRACE_BATCH = 2
"""Images in the example batch the model is traced with."""

CHECK_BATCH = 5
"""Images the export is checked on (not ``TRACE_BATCH``: the batch axis must be free)."""

RTOL, ATOL = 1e-4, 1e-5
"""How close the export's outputs must be to the original's (float32 kernels of
another runtime may sum in another order)."""


@dataclass(frozen=True)
class ExportedModel:
    """What :func:`export_run` wrote; ``to_dict`` is ``export-model --json``."""

    run: LoadedRun
    format: str
    path: Path
    bytes: int
    capsule_dim: int
    checked_images: int
    max_abs_difference: float
    preprocessing: dict[str, Any] | None = None
    preprocessing_path: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        c, h, w = self.run.arch.input_shape
        return {
            **run_summary(self.run),
            "format": self.format,
            "path": str(self.path),
            "bytes": self.bytes,
            "input": {"name": INPUT_NAME, "shape": ["batch", c, h, w]},
            "outputs": {
                OUTPUT_NAMES[0]: ["batch", self.run.arch.num_classes],
                OUTPUT_NAMES[1]: ["batch", self.run.arch.num_classes, self.capsule_dim],
            },
            "checked_images": self.checked_images,
            "max_abs_difference": self.max_abs_difference,
            "preprocessing": self.preprocessing,
            "preprocessing_path": str(self.preprocessing_path) if self.preprocessing_path else None,
        }


def preprocessing_path(model_path: Path) -> Path:
    """Where the model file's preprocessing record goes: ``model.onnx.json``."""
    return model_path.with_name(model_path.name + ".json")


def preprocessing(run: LoadedRun) -> dict[str, Any]:
    """What a deployment of ``run`` must do to an image, and what the outputs mean."""
    from nasmlcn.data import RESIZE_METHOD

    c, h, w = run.arch.input_shape
    identity = run.identity
    classes = list(identity.classes) if identity is not None else None
    if classes is not None and len(classes) != run.arch.num_classes:
        classes = None  # another dataset's names would be wrong
    size = identity.image_size if identity is not None else None
    return {
        "schema_version": 1,
        "input_shape": [c, h, w],
        "channels": "grey" if c == 1 else "RGB",
        "pixels": "uint8 images (N, C, H, W) divided by 255, so in [0, 1]",
        "normalization": run.train_config.get("normalization"),
        "normalize": "input = (pixels - mean[c]) / std[c] per channel; none: pixels as they are",
        "image_size": size,
        "resize": RESIZE_METHOD if size is not None else None,
        "classes": classes,
        "outputs": "probabilities (N, K): the class capsules' lengths, in the order of classes",
        "dataset": identity.to_dict() if identity is not None else None,
    }


def default_export_path(run: LoadedRun, fmt: str) -> Path:
    """``RUN/model<suffix>`` (``model.onnx``, ``model.torchscript.pt``)."""
    return run.path / f"model{export_format(fmt).suffix}"


_SEPARATORS = tuple(s for s in (os.sep, os.altsep) if s)


def export_path(run: LoadedRun, fmt: str, path: str | Path | None = None) -> Path:
    """The file :func:`export_run` writes ``run`` to as ``fmt``: ``path``, or the
    default file name inside it where ``path`` is a folder, one that exists or a
    path that ends in a separator (``exports/``: ``exports/model.onnx``, the folder
    made if missing); without ``path``, :func:`default_export_path`."""
    if path is None:
        return default_export_path(run, fmt)
    if str(path).endswith(_SEPARATORS) or Path(path).is_dir():  # Path drops a last "/"
        return Path(path) / default_export_path(run, fmt).name
    return Path(path)


def export_run(
    run: LoadedRun,
    fmt: str,
    path: str | Path | None = None,
    *,
    images: torch.Tensor | None = None,
    replace: bool = False,
) -> ExportedModel:
    """Writes ``run``'s classifier as ``fmt`` to ``path`` and checks it.

    Args:
        run: From :func:`~nasmlcn.runs.load_run`.
        fmt: A registered export format, in any case (``ONNX``).
        path: The file (default :func:`default_export_path`), or a folder to write
            it in under the default file name (:func:`export_path`); written
            atomically, its missing folders made (as every command's ``--out``).
        images: Inputs ``(N, C, H, W)`` as the model takes them, to check on.
        replace: Write over a file already at ``path`` or at its ``FILE.json`` (else it
            is refused: a model exported earlier, perhaps of another run, or a file of
            the user's, is not lost without a word).

    Raises:
        UnknownNameError: ``fmt`` is not registered.
        ExportError: The file is itself a folder, already exists (without
            ``replace``) or cannot be written, the format's packages are missing, or
            the export's outputs differ from the model's.
    """
    spec = export_format(fmt)
    target = export_path(run, spec.name, path)
    if target.is_dir():
        raise ExportError(f"export file {str(target)!r} is a folder; give the file to write")
    if target.parent.exists() and not target.parent.is_dir():  # a missing one is made
        raise ExportError(
            f"export file {str(target)!r}: {str(target.parent)!r} is a file, not a folder"
        )
    _check_not_a_run_file(run, target, spec.name)
    _check_not_a_run_file(run, preprocessing_path(target), spec.name)
    for written in (target, preprocessing_path(target)):  # the model's FILE.json too
        if written.exists() and not replace:
            raise ExportError(
                f"export file {str(written)!r} already exists; give another ‹out›, or ‹replace› "
                "to write over it"
            )
    model = classifier(run.model.cpu(), run.arch)
    shape = run.arch.input_shape
    if images is None:
        generator = torch.Generator().manual_seed(0)
        images = torch.rand(CHECK_BATCH, *shape, generator=generator)  # (N, C, H, W)
    if tuple(images.shape[1:]) != shape:
        raise ExportError(f"check images are {tuple(images.shape[1:])}, the model takes {shape}")
    try:
        with atomic_path(target) as tmp:
            spec.write(model, images[:TRACE_BATCH].contiguous(), tmp)
    except OSError as err:
        raise ExportError(f"cannot write {str(target)!r}: {err.strerror or err}") from None
    checked = images[:CHECK_BATCH]
    with torch.no_grad():
        expected = model(checked)
    difference = compare_outputs(expected, spec.load(target)(checked))
    record = preprocessing(run)
    sidecar = preprocessing_path(target)
    try:
        with atomic_path(sidecar) as tmp:
            tmp.write_text(json.dumps(record, indent=1) + "\n")
    except OSError as err:
        raise ExportError(f"cannot write {str(sidecar)!r}: {err.strerror or err}") from None
    return ExportedModel(
        run=run,
        format=spec.name,
        path=target,
        bytes=target.stat().st_size,
        capsule_dim=int(expected[1].shape[-1]),
        checked_images=len(checked),
        max_abs_difference=difference,
        preprocessing=record,
        preprocessing_path=sidecar,
    )


def _check_not_a_run_file(run: LoadedRun, target: Path, fmt: str) -> None:
    """Refuses a ``target`` that would overwrite a run's own files (its checkpoint,
    ``arch.json`` or ``result.json``, this run's or another's)."""
    from nasmlcn.training import ARCH_NAME, CHECKPOINT_NAME, RESULT_NAME

    names = (CHECKPOINT_NAME, ARCH_NAME, RESULT_NAME)
    own = {(run.path / name).resolve() for name in names}
    if target.resolve() in own or (target.name in names and target.exists()):
        raise ExportError(
            f"export file {str(target)!r} is a run's {target.name}, which the export would "
            f"overwrite; give another file (default: {default_export_path(run, fmt)})"
        )


def compare_outputs(expected: Outputs, got: Outputs) -> float:
    """The largest absolute difference between an export's outputs ``got`` and the
    model's ``expected`` ones.

    Raises:
        ExportError: An output differs beyond ``RTOL``/``ATOL`` or has another shape.
    """
    worst = 0.0
    for name, want, have in zip(OUTPUT_NAMES, expected, got, strict=True):
        want, have = want.detach(), have.detach()
        if want.shape != have.shape:
            raise ExportError(
                f"the exported model's {name} have shape {tuple(have.shape)}, the model's "
                f"{tuple(want.shape)}; the file was written but should not be used"
            )
        if not torch.allclose(have, want, rtol=RTOL, atol=ATOL):
            raise ExportError(
                f"the exported model's {name} differ from the model's by up to "
                f"{float((have - want).abs().max()):.3g}; the file was written but should "
                "not be used"
            )
        worst = max(worst, float((have - want).abs().max()))
    return worst
