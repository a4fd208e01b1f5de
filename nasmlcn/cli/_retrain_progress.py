"""The live display of ``nasmlcn retrain`` (its own module, so that the CLI's
import, and ``--help``, does not load the search and Optuna)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Console

from nasmlcn._text import counted
from nasmlcn.cli._progress import TrainProgress
from nasmlcn.search import RetrainObserver, RetrainReport, RetrainTarget
from nasmlcn.study import RetrainedModel

if TYPE_CHECKING:
    import optuna

    from nasmlcn.training import Callback

logger = logging.getLogger(__name__)


class RetrainProgress(TrainProgress, RetrainObserver):
    """A bar over the models, and each model's own training display (epochs,
    batches, a line per epoch) under it; at the end, the study's dashboard note."""

    def __init__(self, console: Console, *, quiet: bool = False) -> None:
        super().__init__(console, "", label="train")
        self.quiet = quiet
        self.progress.disable = quiet  # TrainProgress itself is never quiet
        self._total = 0

    def on_start(self, study: optuna.Study, targets: Sequence[RetrainTarget]) -> None:
        self._total = len(targets)
        self.bar("models", "models", total=self._total, completed=0)

    def training_callbacks(self, target: RetrainTarget, index: int) -> Sequence[Callback]:
        self.remove("epochs")
        self.remove("epoch")
        c = target.config
        # a refit trains on the validation images too: it has none to validate on
        self.validates = not target.refit
        refit = ", refit on training + validation" if target.refit else ""
        self.title = (
            f"model {index + 1}/{self._total}{refit}: trial {target.number}, "
            f"{target.arch.describe()} on {target.dataset}, {counted(c.epochs, 'epoch')}, batch "
            f"{c.batch_size}, lr {c.lr:g}"
        )
        return () if self.quiet else (self,)

    def on_model_end(self, model: RetrainedModel) -> None:
        self.bar("models", advance=1, stats=f"last: test acc {model.test_accuracy:.4f}")
        if self.quiet:
            return
        validation_run = (
            f", its validation run's {model.validation_run_test_accuracy:.4f}"
            if model.validation_run_test_accuracy is not None
            else ""
        )
        self.console.print(
            f"trial {model.number}: test accuracy {model.test_accuracy:.4f} "
            f"({model.tested}, {model.test_images} images{validation_run}), "
            f"{model.train_images_per_second:.0f} training "
            f"img/s, {model.inference_images_per_second:.0f} inference img/s, measured on "
            f"{model.device}; {model.weights}",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )

    def on_end(self, study: optuna.Study, report: RetrainReport) -> None:
        # the dashboard's study note lists the retrained models; a failure here
        # must not lose a finished run (its results are stored already)
        try:
            from nasmlcn.dashboard import refresh_study

            refresh_study(study, notes="none")
        except Exception:
            logger.warning("could not update the dashboard's study note", exc_info=True)
