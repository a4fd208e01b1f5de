"""Trained runs: loading a run folder, evaluating, exporting and pruning its model.

A run folder holds ``checkpoint.pt`` (architecture and weights) and ``arch.json``,
as ``nasmlcn train --out``, ``nasmlcn best --export`` and ``nasmlcn prune --keep``
write them. The registry of export formats is pure Python (the CLI's help lists
it); everything else imports torch when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nasmlcn.runs._formats import EXPORT_FORMATS, ExportFormat

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.runs._classifier import Classifier, classifier
    from nasmlcn.runs._evaluate import InferenceSettings, RunEvaluation, evaluate_run
    from nasmlcn.runs._export import ExportedModel, default_export_path, export_run
    from nasmlcn.runs._load import LoadedRun, load_run
    from nasmlcn.runs._prune import check_out_dir, check_prunable, prune_run, save_pruned
    from nasmlcn.runs._prune_figure import write_pruning_figure

__all__ = [
    "EXPORT_FORMATS",
    "Classifier",
    "ExportFormat",
    "ExportedModel",
    "InferenceSettings",
    "LoadedRun",
    "RunEvaluation",
    "check_out_dir",
    "check_prunable",
    "classifier",
    "default_export_path",
    "evaluate_run",
    "export_run",
    "load_run",
    "prune_run",
    "save_pruned",
    "write_pruning_figure",
]

_LAZY = {
    "Classifier": "_classifier",
    "classifier": "_classifier",
    "InferenceSettings": "_evaluate",
    "RunEvaluation": "_evaluate",
    "evaluate_run": "_evaluate",
    "ExportedModel": "_export",
    "default_export_path": "_export",
    "export_run": "_export",
    "LoadedRun": "_load",
    "load_run": "_load",
    "check_out_dir": "_prune",
    "check_prunable": "_prune",
    "prune_run": "_prune",
    "save_pruned": "_prune",
    "write_pruning_figure": "_prune_figure",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nasmlcn.runs' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"nasmlcn.runs.{module}"), name)
