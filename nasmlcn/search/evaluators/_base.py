"""An evaluator: how a candidate's accuracy is obtained, behind one protocol
(:class:`Evaluator`: what it takes, :class:`EvalRequest`, and gives,
:class:`Evaluation`, with a report after every epoch), and the evaluators by name
(``EVALUATORS``, ``--evaluator``), each added with :func:`register_evaluator` where it
is defined: ``train`` trains the model for real (``_train``); ``proxy`` (``_proxy``)
is a fast analytic stand-in for dry runs and tests, labelled as such on every trial
and on the study.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from nasmlcn._defaults import LEARNING_RATE
from nasmlcn.registry import Registry
from nasmlcn.specs import MLCNSpec

if TYPE_CHECKING:
    from nasmlcn.data import DatasetInfo
    from nasmlcn.search._config import SearchConfig


@dataclass(frozen=True)
class EpochDecision:
    """What the search decides after an epoch; the epoch callback returns it.

    Attributes:
        action: ``continue``; ``prune`` (the pruner or ``--trial-timeout`` stops the
            trial, which ends PRUNED); ``stop`` (the search's ``--timeout`` ran out:
            the trial is queued again and a re-run resumes it).
        reason: Why, for the trial's record (empty for ``continue``).
    """

    action: str = "continue"
    reason: str = ""

    @property
    def goes_on(self) -> bool:
        return self.action == "continue"


CONTINUE = EpochDecision()
"""The decision to train the next epoch."""


@dataclass(frozen=True)
class EvalRequest:
    """One candidate to evaluate.

    Attributes:
        spec: The model.
        trial: Trial number (a retried trial gives the number of the trial it
            retries).
        seed: The search's seed.
        model_seed: Seeds training together with ``seed``: drawn from the model and
            its training settings (:func:`nasmlcn.search._run.repeats.training_seed`), so
            that one model trains identically in every trial that proposes it; None:
            the trial number does. Use :attr:`training_seed`.
        epochs: Epochs to train.
        batch_size: Training batch size.
        lr: Initial learning rate.
        lr_policy: Learning-rate policy (``nasmlcn.training.LR_POLICIES``); None:
            the batch policy's own, else the trainer's default.
        batch_policy: Batch-size policy (``nasmlcn.training.BATCH_POLICIES``).
        assignment: Lane -> target device index (for lane-parallel training).
        checkpoint_path: Where to write a checkpoint after every epoch (evaluators
            with ``checkpoints = True``; None: nowhere).
        resume: Go on from the checkpoint at ``checkpoint_path`` (a retried trial).
        should_stop: Asked between training batches (evaluators that train);
            a reason it returns stops the evaluation at once with
            ``nasmlcn.training.TrainingStopped``, which the trial turns into the
            search's time-budget stop (the search's ``--timeout``).
    """

    spec: MLCNSpec
    trial: int
    seed: int
    epochs: int
    batch_size: int = 100
    lr: float = LEARNING_RATE
    lr_policy: str | None = None
    batch_policy: str = "fixed"
    assignment: tuple[int, ...] = ()
    checkpoint_path: str | None = None
    resume: bool = False
    should_stop: Callable[[], str | None] | None = field(default=None, compare=False, repr=False)
    model_seed: int | None = None

    @property
    def training_seed(self) -> int:
        """The seed of this training (from ``seed`` and the model, else the trial)."""
        own = self.trial if self.model_seed is None else self.model_seed
        return (self.seed * 1_000_003 + own) % 2**31


@dataclass(frozen=True)
class EpochReport:
    """Sent after every epoch; the callback answers with an :class:`EpochDecision`.

    ``seconds`` counts from the trial's start (every epoch so far, validation
    included); ``val_loss`` is the validation loss and ``images_per_second`` the
    epoch's training rate (None: the evaluator has none, as the proxy).
    """

    epoch: int
    val_accuracy: float
    seconds: float
    val_loss: float | None = None
    images_per_second: float | None = None


@dataclass(frozen=True)
class Evaluation:
    """What an evaluator measured.

    Attributes:
        accuracy: Validation accuracy after the last epoch.
        val_accuracy_per_epoch: Validation accuracy after every epoch.
        seconds: Training time (all epochs, validation included).
        step_seconds: Measured mean training step time (None for the proxy).
        images_per_second: Measured training throughput (None for the proxy).
        peak_memory_bytes: Measured peak training memory (None for the proxy).
        device: Where it trained (``cpu``, ``cuda:0``; ``proxy`` for the proxy).
        mode: ``single-device``, ``lane-parallel`` or ``proxy``.
        extra: Anything else worth keeping (versions, per-epoch details).
        measured_inference_latency_s: Measured seconds per image of classifying
            validation images after training (eval mode, no gradients, no
            decoder; :func:`nasmlcn.measure.time_inference`); None when nothing
            was measured (the proxy).
        measured_inference_device: Where that was measured.
        measured_inference_batch_size: Images per timed pass.
        measured_inference_p25_s: The timed passes' 25th percentile per image
            (with the 75th: the measured figure's spread, its interquartile range).
        measured_inference_p75_s: Their 75th percentile per image.
    """

    accuracy: float
    val_accuracy_per_epoch: tuple[float, ...]
    seconds: float
    step_seconds: float | None = None
    images_per_second: float | None = None
    peak_memory_bytes: int | None = None
    device: str = "proxy"
    mode: str = "proxy"
    extra: Mapping[str, Any] = field(default_factory=dict)
    measured_inference_latency_s: float | None = None
    measured_inference_device: str | None = None
    measured_inference_batch_size: int | None = None
    measured_inference_p25_s: float | None = None
    measured_inference_p75_s: float | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["val_accuracy_per_epoch"] = list(self.val_accuracy_per_epoch)
        data["extra"] = dict(self.extra)
        return data


EpochCallback = Callable[[EpochReport], EpochDecision]
"""Called after every epoch; what it returns says whether training goes on."""


class Evaluator(Protocol):
    """Turns a request into an :class:`Evaluation`, calling ``on_epoch`` after every
    epoch; after an epoch whose decision does not go on it stops training and returns
    what it has (the trial, which made the decision, ends it as decided).

    Attributes:
        name: Registry name.
        measured: True when accuracy comes from real training (a proxy's is labelled
            as such on every trial and on the study).
        checkpoints: True when it writes ``request.checkpoint_path`` after every epoch
            and resumes from it (the search then keeps trials' checkpoints and
            weights as Optuna artifacts).
    """

    name: str
    measured: bool
    checkpoints: bool

    def evaluate(self, request: EvalRequest, on_epoch: EpochCallback) -> Evaluation: ...


class EvaluatorFactory(Protocol):
    """What ``EVALUATORS`` holds: an evaluator's class, whose attributes the search
    reads before it makes one (``measured``: label the study; ``checkpoints``: keep
    the trials' files), called with the search's configuration and dataset."""

    name: str
    measured: bool
    checkpoints: bool

    def __call__(self, *, config: SearchConfig, dataset: DatasetInfo) -> Evaluator: ...


EVALUATORS: Registry[EvaluatorFactory] = Registry("evaluator")

_Factory = TypeVar("_Factory", bound=EvaluatorFactory)


def register_evaluator(name: str) -> Callable[[_Factory], _Factory]:
    """Registers the decorated evaluator class in ``EVALUATORS`` as ``name``
    (``--evaluator``); returns it unchanged.

    Raises:
        ValueError: The class's own ``name`` is another.
    """

    def add(factory: _Factory) -> _Factory:
        if factory.name != name:
            raise ValueError(f"evaluator {name!r} is a class named {factory.name!r}")
        EVALUATORS.register(name, factory)
        return factory

    return add
