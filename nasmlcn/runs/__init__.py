"""Trained runs: loading a run folder, evaluating, exporting and pruning its model.

A run folder holds ``checkpoint.pt`` (architecture and weights) and ``arch.json``,
as ``nasmlcn train --out``, ``nasmlcn best --export`` and ``nasmlcn prune --keep``
write them. The registry of export formats is pure Python (the CLI's help lists
it); everything else imports torch when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn._lazy import face
from nasmlcn.runs._formats import EXPORT_FORMATS, ExportFormat, export_format

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.runs._classifier import Classifier, classifier
    from nasmlcn.runs._evaluate import InferenceSettings, RunEvaluation, evaluate_run
    from nasmlcn.runs._export import ExportedModel, default_export_path, export_run
    from nasmlcn.runs._lane_removal import (
        LANE_REMOVAL_REPORT,
        check_removable,
        check_removal_out_dir,
        remove_lanes,
        save_without_lanes,
    )
    from nasmlcn.runs._lane_removal_figure import write_lane_removal_figure
    from nasmlcn.runs._load import LoadedRun, load_run

__getattr__, __all__ = face(__name__)
