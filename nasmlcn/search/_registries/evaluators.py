"""Evaluators by name (``--evaluator``): ``train`` (:mod:`nasmlcn.search._evaluators.train`)
and ``proxy`` (:mod:`nasmlcn.search._evaluators.proxy`) register themselves here."""

from __future__ import annotations

from collections.abc import Callable

from nasmlcn.registry import Registry
from nasmlcn.search._types.evaluation import Evaluator

EvaluatorFactory = Callable[..., Evaluator]
EVALUATORS: Registry[EvaluatorFactory] = Registry("evaluator")
