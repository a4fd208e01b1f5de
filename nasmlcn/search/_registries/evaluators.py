"""Evaluators by name (``--evaluator``): ``train`` (:mod:`nasmlcn.search._evaluators.train`)
and ``proxy`` (:mod:`nasmlcn.search._evaluators.proxy`) register themselves here."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from nasmlcn.registry import Registry

if TYPE_CHECKING:
    from nasmlcn.data import DatasetInfo
    from nasmlcn.search._config.config import SearchConfig
    from nasmlcn.search._types.evaluation import Evaluator


class EvaluatorFactory(Protocol):
    """What ``EVALUATORS`` holds: an evaluator's class, whose attributes the search
    reads before it makes one (``measured``: label the study; ``checkpoints``: keep
    the trials' files), called with the search's configuration and dataset."""

    name: str
    measured: bool
    checkpoints: bool

    def __call__(self, *, config: SearchConfig, dataset: DatasetInfo) -> Evaluator: ...


EVALUATORS: Registry[EvaluatorFactory] = Registry("evaluator")
