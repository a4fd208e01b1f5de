"""nasmlcn: hardware-aware neural architecture search for Multi-Lane Capsule Networks.

Importing ``nasmlcn`` is cheap and never imports torch: the planning layer (specs,
registries, lane syntax) is pure Python. The torch parts live in
:mod:`nasmlcn.models`, :mod:`nasmlcn.data` loaders and :mod:`nasmlcn.training`, and
are imported only when used.

The verbs a user needs are here too, imported when first used: search
(:func:`run_search`, with worker processes too, :class:`SearchConfig`), plan
(:func:`plan_model`), train (:func:`train`, :class:`TrainJob`,
:class:`TrainConfig`), retrain (:func:`retrain_study`, :class:`RetrainOptions`) and
load results (:func:`load_existing_study`, :func:`best_trials`, :func:`load_run`).

Importing it bounds how long torch's idle OpenMP threads spin before they sleep
(``GOMP_SPINCOUNT=10000``) where the environment chooses no wait
(:func:`nasmlcn.hardware.bounded_wait`): a spinning thread holds a core other
processes need. It takes effect where ``nasmlcn`` is imported before torch (the
command line always is).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from nasmlcn._lazy import face
from nasmlcn._version import SOURCE_VERSION as __version__
from nasmlcn.errors import NasmlcnError
from nasmlcn.hardware import bounded_wait as _bounded_wait
from nasmlcn.specs import (
    ARCH_SCHEMA_VERSION,
    CapsNetSpec,
    LaneSpec,
    MLCNSpec,
    format_lanes,
    load_arch,
    parse_lanes,
)

if TYPE_CHECKING:  # what the module __getattr__ below imports when first used
    from nasmlcn.planning import plan_model
    from nasmlcn.runs import load_run
    from nasmlcn.search import (
        RetrainOptions,
        SearchConfig,
        best_trials,
        retrain_study,
        run_search,
    )
    from nasmlcn.study import load_existing_study
    from nasmlcn.training import TrainConfig, TrainJob, train


# A library prints nothing of its own: without this, Python's last-resort handler
# writes nasmlcn's warnings (a trial queued again, an observer that failed) to the
# stderr of a program that configured no logging. The CLI and any program that
# configures logging still get them through the root logger.
logging.getLogger("nasmlcn").addHandler(logging.NullHandler())
_bounded_wait()  # before torch starts its thread pool (see the module docstring)

__getattr__, __all__ = face(__name__)
