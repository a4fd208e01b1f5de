"""The formats ``nasmlcn export-model`` writes (a registry).

Importing this module does not import torch (the CLI's help lists the formats).
Each :class:`ExportFormat` writes a :class:`~nasmlcn.runs._classifier.Classifier`
(images in, class probabilities and class capsules out, no decoder) traced on
an example batch, with the batch size left free, and loads the file back as a
function of the same inputs, so every export is checked against the model it
came from.

- ``torchscript``: ``torch.jit.trace`` + ``torch.jit.save``; load with
  ``torch.jit.load`` (Python or C++ libtorch, no nasmlcn needed).
- ``onnx``: torch's ``torch.export``-based exporter (``torch.onnx.export(...,
  dynamo=True)``, torch >= 2.5, with the ``onnx`` and ``onnxscript`` packages),
  a dynamic batch axis; loaded with ONNX Runtime.
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from nasmlcn.errors import ExportError, UnknownNameError
from nasmlcn.registry import Registry, did_you_mean

if TYPE_CHECKING:
    import torch

    from nasmlcn.runs._classifier import Classifier

logger = logging.getLogger(__name__)

INPUT_NAME = "images"
OUTPUT_NAMES = ("probabilities", "class_capsules")

Outputs = tuple["torch.Tensor", ...]
"""``(probabilities (B, K), class capsules (B, K, D))``."""


@dataclass(frozen=True)
class ExportFormat:
    """One export format.

    Attributes:
        name: Registry name (``--format``).
        suffix: File name ending of its default output (``model<suffix>``).
        description: One line for help texts.
        write: ``write(classifier, example, path)`` writes the file (``example``:
            an input batch ``(B, C, H, W)`` to trace with).
        load: ``load(path)`` is a function from an input batch to the outputs.
    """

    name: str
    suffix: str
    description: str
    write: Callable[[Classifier, torch.Tensor, Path], None]
    load: Callable[[Path], Callable[[torch.Tensor], Outputs]]


EXPORT_FORMATS: Registry[ExportFormat] = Registry("export format")


def export_format(name: str) -> ExportFormat:
    """The export format ``name``, in any case (``ONNX``, ``TorchScript``).

    Raises:
        UnknownNameError: No format is called so; the message names the closest
            and every accepted one.
    """
    folded = name.strip().lower()
    if folded in EXPORT_FORMATS:
        return EXPORT_FORMATS.get(folded)
    hint = did_you_mean(name, EXPORT_FORMATS, otherwise="", fold=str.lower)
    raise UnknownNameError(
        f"unknown export format {name!r}; {hint + ' ' if hint else ''}"
        f"accepted, in any case: {', '.join(EXPORT_FORMATS)}"
    )


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Keeps exporters' chatter (print, warnings) out of the command's output:
    stdout carries ``--json``. It is logged at debug level instead."""
    chatter = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(chatter):
        # torch.jit.trace is deprecated in favour of torch.export, and warns that the
        # routing's `k == 1` test is traced as a constant: it is one (K is fixed).
        warnings.simplefilter("ignore")
        yield
    if chatter.getvalue():
        logger.debug("exporter output:\n%s", chatter.getvalue())


def _write_torchscript(model: Classifier, example: torch.Tensor, path: Path) -> None:
    import torch

    with _quiet(), torch.no_grad():
        # One call first: a model makes some constants on its first call (an MLCN's
        # lane-order index, made once per device), and the trace's check, which
        # traces twice, would see two graphs (made, then cached).
        model(example)
        traced = torch.jit.trace(model, example)
        torch.jit.save(traced, str(path))


def _load_torchscript(path: Path) -> Callable[[torch.Tensor], Outputs]:
    import torch

    with _quiet():
        module = torch.jit.load(str(path), map_location="cpu")
    module.eval()

    def run(images: torch.Tensor) -> Outputs:
        with torch.no_grad():
            return tuple(module(images))

    return run


EXPORT_FORMATS.register(
    "torchscript",
    ExportFormat(
        "torchscript",
        ".torchscript.pt",
        "TorchScript (torch.jit.load, Python or C++)",
        _write_torchscript,
        _load_torchscript,
    ),
)


# What writing (onnx, onnxscript) and checking (onnxruntime) an ONNX file needs:
# nasmlcn's ``onnx`` extra.
_ONNX_MODULES = ("onnx", "onnxscript", "onnxruntime")


def _check_onnx_installed() -> None:
    missing = [m for m in _ONNX_MODULES if not _importable(m)]
    if missing:
        raise ExportError(
            f"ONNX export needs the Python package(s) {', '.join(missing)}: "
            "pip install 'nasmlcn[onnx]'"
        )


def _write_onnx(model: Classifier, example: torch.Tensor, path: Path) -> None:
    _check_onnx_installed()  # before anything is written
    import torch

    batch = torch.export.Dim("batch")
    with _quiet(), torch.no_grad():
        torch.onnx.export(
            model,
            (example,),
            str(path),
            input_names=[INPUT_NAME],
            output_names=list(OUTPUT_NAMES),
            dynamic_shapes={"images": {0: batch}},
            dynamo=True,
            external_data=False,
        )


def _load_onnx(path: Path) -> Callable[[torch.Tensor], Outputs]:
    _check_onnx_installed()
    import onnxruntime
    import torch

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def run(images: torch.Tensor) -> Outputs:
        outputs = session.run(None, {INPUT_NAME: images.detach().cpu().numpy()})
        return tuple(torch.from_numpy(o) for o in outputs)

    return run


EXPORT_FORMATS.register(
    "onnx",
    ExportFormat(
        "onnx",
        ".onnx",
        "ONNX with a dynamic batch axis (ONNX Runtime and others)",
        _write_onnx,
        _load_onnx,
    ),
)


def _importable(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
