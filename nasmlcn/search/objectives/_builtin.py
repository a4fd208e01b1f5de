"""Objectives by name: what a trial is scored on, and in which direction.

``accuracy`` comes from the evaluator (validation accuracy after the last epoch);
``latency``, ``inference``, ``memory`` and ``params`` are predictions for the
*target* devices from the plan (cost model + placement), the same whatever
machine trains. ``latency`` is the predicted *training step* time (the placement's
makespan); ``inference`` the predicted time to classify one image (batch 1):
each device runs its lanes' forward passes, the devices in parallel, then the
class capsules on the head device, without the decoder. Both are in the cost
model's time unit (seconds for ``analytic`` and ``calibrated``). The ``train``
evaluator also *measures* inference latency on the device that trained the
model; that figure is stored on the trial, never used as an objective.

``energy`` is the energy of one inference, in mJ, which only the ``capsacc``
cost model predicts (NASCaps eq. 7; every lane's layers, the devices' sums). It
is refused with any other cost model rather than guessed: GPUs' catalog entries
carry no power figures. ``--devices capsacc`` selects that model, and there a
NASCaps search is ``--objectives accuracy,energy,inference,memory``: on CapsAcc
``inference`` is NASCaps' latency, ``memory`` its weight memory (MiB here, KiB
there) and ``latency`` that latency times the batch size (a "step" of an
inference-only accelerator), so either ranks models the same at a fixed batch.

A trained trial must also *learn*: its accuracy beats chance by a clear margin.
A model at chance accuracy (0.098 on Fashion-MNIST) is often the cheapest of a
study, so without this it sits on the accuracy-vs-cost Pareto front, ``retrain
--pareto`` trains it again and it squeezes every figure's accuracy axis. The
runner sets the constraint :data:`LEARNING_CONSTRAINT` on every trained trial:
``threshold - accuracy``, feasible (<= 0) when the trial learned. Optuna's Pareto
front and nasmlcn's best trials consider only feasible trials, so a trial that did
not learn stays in the study (its curve, its costs, its checkpoint) but is no
candidate; the figures and tables show it apart.

The threshold is chance (one over the number of classes) plus a tenth of the way
from chance to perfect: 0.19 for 10 classes, 0.55 for two. On a validation set of
1,000 images at 10 classes, chance's standard deviation is 0.0095, so 0.19 is
more than 9 of them above chance: no model that learned nothing reaches it by luck.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nasmlcn.errors import SearchError
from nasmlcn.search.objectives._base import OBJECTIVES, register_objective

if TYPE_CHECKING:
    from nasmlcn.planning import Plan
    from nasmlcn.search.evaluators._base import Evaluation

MIB = 2**20


@register_objective(
    "accuracy",
    "maximize",
    "accuracy",
    "validation accuracy after the last epoch (max)",
    needs_training=True,
)
def accuracy(plan: Plan, evaluation: Evaluation | None) -> float:
    assert evaluation is not None
    return evaluation.accuracy


@register_objective(
    "latency",
    "minimize",
    "latency_s",
    "predicted training step time of the lanes on the target devices = placement "
    "makespan, the head left out (min)",
)
def latency(plan: Plan, _: Evaluation | None) -> float:
    return plan.makespan


@register_objective(
    "inference",
    "minimize",
    "inference_latency_s",
    "predicted inference latency per image (batch 1) on the target devices: "
    "lanes' forward passes in parallel (inference makespan) + class capsules on the "
    "head device, no decoder (min)",
)
def inference(plan: Plan, _: Evaluation | None) -> float:
    return plan.inference_latency


@register_objective(
    "memory",
    "minimize",
    "memory_MiB",
    "predicted training memory of the fullest device, MiB (min)",
)
def memory(plan: Plan, _: Evaluation | None) -> float:
    return plan.peak_memory_bytes / MIB


@register_objective("params", "minimize", "params", "trainable parameters (min)")
def params(plan: Plan, _: Evaluation | None) -> float:
    return float(plan.costs.params)


@register_objective(
    "energy",
    "minimize",
    "energy_mJ",
    "predicted energy of one inference on CapsAcc (NASCaps eq. 7), mJ; "
    "needs the capsacc cost model, e.g. ‹devices› capsacc (min)",
    cost_models=("capsacc",),
)
def energy(plan: Plan, _: Evaluation | None) -> float:
    from nasmlcn.costs import mlcn_energy_j

    if plan.cost_model not in OBJECTIVES.get("energy").cost_models:
        raise SearchError(f"objective 'energy' needs cost model capsacc, not {plan.cost_model!r}")
    return mlcn_energy_j(plan.spec) * 1e3
