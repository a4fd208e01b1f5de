"""``train``: the real trainer as a search evaluator.

The dataset is loaded once per search (a seeded train/validation split; the test
set is never touched during a search). Each candidate is built, trained with the
default :class:`~nasmlcn.training.TrainConfig` (Adam 1e-3, one-cycle schedule,
batch ``--batch-size``; the lr, batch size, lr policy and batch policy the space
searches, where it opens them) for the configured epochs, and
validated after every epoch. Measured alongside: the step time, images per second
and peak training memory (:class:`nasmlcn.measure.PeakMemory`, as ``nasmlcn
calibrate`` measures it: ``torch.cuda.max_memory_allocated`` on a GPU; on a CPU the
kernel's high-water mark of the process's resident memory, reset when the trial
starts), and after training the inference latency on the same device(s):
the median of 20 timed passes (after 3 warm-up passes) classifying one
validation image each (batch ``INFERENCE_BATCH_SIZE`` = 1; eval mode, no
gradients, no decoder; :func:`nasmlcn.measure.time_inference`), stored as
``measured_inference_latency_s`` next to the device it ran on, with its spread
over the passes (``measured_inference_p25_s`` and ``measured_inference_p75_s``,
the interquartile range). That device is where the trial trained, usually not
the target devices the plan predicts for: reports keep the two apart.

Where it trains (``SearchConfig.run_on``): when the trial's target devices are
present here (``--devices 2xH100`` with ``--run-on auto`` on a two-H100 machine),
or ``--run-on cuda:0,cuda:1`` names several devices (target device ``j`` on entry
``j mod n``), the lanes are placed on them as the trial's placement says and
trained lane-parallel in this process (:class:`~nasmlcn.parallel.PlacedMLCN`);
otherwise the whole model trains on one device, exactly as before. Every
evaluation says which: ``mode`` is ``lane-parallel`` or ``single-device``, and
``device`` lists the devices used.

Before a trial trains, its model's predicted training memory is checked against
what the device has free, and, for a worker that shares its GPU with others
(``--workers-per-gpu``, ``$NASMLCN_WORKERS_PER_GPU``), against its share of the
GPU's memory (:func:`nasmlcn.training.check_training_memory`).
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasmlcn.costs import INFERENCE_BATCH_SIZE
from nasmlcn.data import DatasetInfo
from nasmlcn.errors import DeviceError, SearchError, nested
from nasmlcn.hardware import busy_record, look_at_load
from nasmlcn.search._config import workers_per_gpu
from nasmlcn.search.evaluators._base import (
    EpochCallback,
    EpochReport,
    EvalRequest,
    Evaluation,
    register_evaluator,
)
from nasmlcn.training import Callback, EpochResult, check_training_memory

if TYPE_CHECKING:
    import torch

    from nasmlcn.data import DataSplits
    from nasmlcn.measure import InferenceTiming, PeakMemory
    from nasmlcn.search._config import SearchConfig
    from nasmlcn.training import TrainConfig

logger = logging.getLogger(__name__)


class _Relay(Callback):
    """Tells the trial each epoch; training stops after one whose decision does not
    go on."""

    def __init__(self, on_epoch: EpochCallback) -> None:
        self.on_epoch = on_epoch
        self.started = time.perf_counter()
        self.stopped = False  # a decision ended training before its last epoch

    def on_epoch_end(self, result: EpochResult) -> str | None:
        decision = self.on_epoch(
            EpochReport(
                result.epoch,
                result.val_accuracy,
                time.perf_counter() - self.started,
                val_loss=result.val_loss,
                images_per_second=result.images_per_second,
            )
        )
        # a callback of an older shape returns None: training goes on
        self.stopped = decision is not None and not decision.goes_on
        return decision.reason if self.stopped else None


@register_evaluator("train")
class TrainEvaluator:
    """Trains every candidate on this machine (see the module docstring)."""

    name = "train"
    measured = True
    checkpoints = True  # writes request.checkpoint_path after every epoch; resumes from it

    def __init__(self, config: SearchConfig, dataset: DatasetInfo, **_: Any) -> None:
        from nasmlcn.parallel import parse_run_on

        self.config = config
        self.dataset = dataset
        try:
            self.run_on = list(parse_run_on(config.run_on))
        except DeviceError as err:
            raise SearchError(f"‹run_on› {nested(err)}") from None
        # --workers-per-gpu: this worker may use its share of the GPU's memory
        self.shared_by = workers_per_gpu()
        self._splits: DataSplits | None = None
        self._target_map: tuple[str, ...] | None = None
        self._target_map_known = False

    def splits(self) -> DataSplits:
        if self._splits is None:
            from nasmlcn.data import load_splits

            c = self.config
            self._splits = load_splits(  # from the data directory it was opened against
                self.dataset,
                c.data_dir,  # where a dataset not opened (a registry entry) is
                download=True,
                seed=c.seed,
                train_limit=c.train_limit,
                val_limit=c.val_limit,
                test_limit=1,
            )
        return self._splits

    def device(self) -> str:
        from nasmlcn.training import resolve_device

        return str(resolve_device(self.run_on[0]))

    def target_map(self) -> tuple[str, ...] | None:
        """The local device of every target device, or None to train on one device.

        None when the target devices are not here (``auto``) or all map to one
        local device (``cpu``, a single GPU), where placing lanes gains nothing.
        """
        if not self._target_map_known:
            from nasmlcn.hardware import load_catalog, parse_devices
            from nasmlcn.parallel import is_spread, map_targets

            c = self.config
            targets = parse_devices(c.devices, mem=c.mem, catalog=load_catalog(c.device_file))
            mapped = map_targets(targets, c.run_on)
            self._target_map = mapped if mapped is not None and is_spread(mapped) else None
            self._target_map_known = True
        return self._target_map

    def lane_devices(self, request: EvalRequest) -> tuple[str, ...] | None:
        """Each lane's local device when ``request`` trains lane-parallel, else None."""
        from nasmlcn.parallel import is_spread, lane_devices

        mapped = self.target_map() if request.assignment else None
        if mapped is None:
            return None
        lanes = lane_devices(request.assignment, mapped)
        return lanes if is_spread(lanes) else None

    def evaluate(self, request: EvalRequest, on_epoch: EpochCallback) -> Evaluation:
        """Trains the candidate on this machine's device, or lane-parallel with each
        lane on the local device its target device maps to and the head where target
        device 0 (the plan's head device) runs."""
        from nasmlcn.measure import PeakMemory
        from nasmlcn.parallel import placer
        from nasmlcn.training import (
            InMemoryJob,
            RunOptions,
            largest_batch_size,
            resolve_device,
            share_cores,
            train,
        )

        began = time.perf_counter()
        lanes = self.lane_devices(request)
        mapped = self.target_map()
        device = mapped[0] if lanes is not None and mapped is not None else self.device()
        splits = self.splits()
        used = [str(resolve_device(d)) for d in dict.fromkeys([device, *(lanes or ())])]
        # The space fits the target devices; this machine may be smaller.
        largest = largest_batch_size(request.batch_policy, request.batch_size, request.epochs)
        batch = min(largest, len(splits.train))
        check_training_memory(
            request.spec, batch, device, lane_devices=lanes, shared_by=self.shared_by
        )
        config = _train_config(request, used[0])
        relay = _Relay(on_epoch)
        memory = PeakMemory(used)
        job_began = time.perf_counter()
        options = RunOptions(
            checkpoint_path=request.checkpoint_path,
            resume=request.resume,
            test=False,
            should_stop=request.should_stop,
        )
        place = None if lanes is None else placer(lanes, device)
        job = InMemoryJob(request.spec, splits, config, options, place=place, measure=memory)
        looked = share_cores("training", used[0])  # fewer threads beside other processes
        run = train(job, [relay])
        job_ended = time.perf_counter()
        if relay.stopped:  # pruned, or the search's time is up: nothing more to measure
            curve = tuple(h.val_accuracy for h in run.history)
            mode = "single-device" if lanes is None else "lane-parallel"
            accuracy = curve[-1] if curve else 0.0
            return Evaluation(accuracy, curve, job_ended - began, device=used[0], mode=mode)
        measured = _measure_trained(run.module, splits, lanes, used, memory)
        # the most cores other processes held before, during or after the training
        measured.extra["machine_load"] = busy_record(looked, look_at_load())
        measured.extra["phases"] = trial_phases(
            run.history, setup=job_began - began, job=job_ended - job_began,
            inference=time.perf_counter() - job_ended,
        )  # fmt: skip
        return _evaluation(request, run.history, splits, relay.started, measured)


@dataclass
class _Measured:
    """What was measured of a trained model besides its curve."""

    device: str  # where it trained ("cuda:0", or the lanes' devices)
    mode: str  # single-device or lane-parallel
    peak_memory_bytes: int
    inference: InferenceTiming
    extra: dict[str, Any]


def _train_config(request: EvalRequest, device: str) -> TrainConfig:
    """The trainer's settings for ``request`` on ``device``."""
    from nasmlcn.training import TrainConfig

    return TrainConfig(
        epochs=request.epochs,
        batch_size=request.batch_size,
        lr=request.lr,
        lr_policy=request.lr_policy,  # None: the batch policy's own (TrainConfig's)
        batch_policy=request.batch_policy,
        seed=request.training_seed,
        device=device,
    )


def _measure_trained(
    module: torch.nn.Module,
    splits: DataSplits,
    lanes: tuple[str, ...] | None,
    used: list[str],
    memory: PeakMemory,
) -> _Measured:
    """The trained model's inference latency, where it ran and its memory."""
    from nasmlcn.parallel import PlacedMLCN

    if lanes is None:
        inference = _measure_inference(module, splits, used[0], used, used[0])
        return _Measured(used[0], "single-device", memory.peak_bytes, inference, {})
    assert isinstance(module, PlacedMLCN)
    where = ",".join(str(d) for d in module.devices)
    inference = _measure_inference(module, splits, module.input_device, module.devices, where)
    extra = {
        "lane_devices": list(lanes),
        "head_device": str(module.head_device),
        "streams": module.streams,
        "peak_memory_bytes_per_device": memory.per_device,
    }
    return _Measured(where, "lane-parallel", memory.peak_bytes, inference, extra)


def trial_phases(
    history: Sequence[EpochResult], *, setup: float, job: float, inference: float
) -> dict[str, float]:
    """Where an evaluation's seconds went: ``setup`` (the data splits, the memory
    check), ``training`` and ``validation`` (the epochs' passes), ``job_other`` (the
    rest of the training job: building and placing the model, data to the device,
    checkpoints, CUDA-graph capture and cuDNN autotuning on a GPU) and ``inference``
    (the measured inference latency's timed passes)."""
    training = sum(h.seconds for h in history)
    validation = sum(h.eval_seconds for h in history)
    return {
        "setup": setup,
        "training": training,
        "validation": validation,
        "job_other": max(job - training - validation, 0.0),
        "inference": inference,
    }


def _measure_inference(
    model: torch.nn.Module,
    splits: DataSplits,
    input_device: torch.device | str,
    devices: Sequence[torch.device | str],
    where: str,
) -> InferenceTiming:
    """The trained model's per-image inference latency on validation images."""
    from nasmlcn.measure import INFERENCE_PASSES, INFERENCE_WARMUP, time_inference

    n = (INFERENCE_WARMUP + INFERENCE_PASSES) * INFERENCE_BATCH_SIZE
    # (n, C, H, W), cycled if fewer; normalised as in training
    images = splits.val.first_inputs(n)
    return time_inference(
        model,
        images,
        input_device=input_device,
        devices=devices,
        device_name=where,
        batch_size=INFERENCE_BATCH_SIZE,
    )


def _evaluation(
    request: EvalRequest,
    history: list[EpochResult],
    splits: DataSplits,
    started: float,
    measured: _Measured,
) -> Evaluation:
    import torch

    inference = measured.inference
    # Step time at the request's batch size (a batch policy trains some epochs at
    # others); every epoch where none did.
    images = len(splits.train)
    at_batch = [h for h in history if h.batch_size in (0, request.batch_size)] or history
    step_seconds = statistics.median(
        h.seconds / -(-images // (h.batch_size or request.batch_size)) for h in at_batch
    )
    return Evaluation(
        accuracy=history[-1].val_accuracy,
        val_accuracy_per_epoch=tuple(h.val_accuracy for h in history),
        seconds=time.perf_counter() - started,
        step_seconds=step_seconds,
        images_per_second=statistics.fmean(h.images_per_second for h in history),
        peak_memory_bytes=int(measured.peak_memory_bytes),
        device=measured.device,
        mode=measured.mode,
        extra={
            "per_epoch": [h.to_dict() for h in history],
            "train_images": len(splits.train),
            "val_images": len(splits.val),
            "threads": torch.get_num_threads(),
            "measured_inference": inference.to_dict(),
            **measured.extra,
        },
        measured_inference_latency_s=inference.seconds_per_image,
        measured_inference_device=inference.device,
        measured_inference_batch_size=inference.batch_size,
        measured_inference_p25_s=inference.p25_seconds_per_image,
        measured_inference_p75_s=inference.p75_seconds_per_image,
    )
