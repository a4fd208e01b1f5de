"""``--workers-per-gpu K``: K workers on each GPU, each held to 1/K of its memory.

No GPU here: the GPUs are named through ``CUDA_VISIBLE_DEVICES`` (what the pool
reads) and their memory through ``nasmlcn.hardware.detect_devices`` and
``available_memory`` (what the checks read)."""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import nasmlcn.hardware
from nasmlcn.costs import get_cost_model
from nasmlcn.data import DATASETS
from nasmlcn.errors import SearchError, TrainingError
from nasmlcn.hardware import LocalDevice, format_bytes
from nasmlcn.search import (
    EpochDecision,
    EvalRequest,
    SearchConfig,
    SearchObserver,
    SearchSetup,
    TrainEvaluator,
    run_search,
    setup_search,
)
from nasmlcn.search._run.shares import check_gpu_sharing, largest_model_memory, plan_workers
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import check_training_memory

GiB = 2**30


@pytest.fixture
def cores() -> int:
    return len(os.sched_getaffinity(0))


def _gpus(monkeypatch: pytest.MonkeyPatch, visible: str, memory: int = 80 * GiB) -> None:
    """This process sees GPUs ``visible``, each of ``memory`` bytes, all free."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    n = len([g for g in visible.split(",") if g.strip()])
    local = [LocalDevice("cpu", "cpu", 64 * GiB, "cpu", 2)] + [
        LocalDevice(f"cuda:{j}", "NVIDIA H100", memory, "H100") for j in range(n)
    ]
    monkeypatch.setattr(nasmlcn.hardware, "detect_devices", lambda *a, **k: local)
    monkeypatch.setattr(nasmlcn.hardware, "available_memory", lambda device: memory)


# --- which worker gets which GPU ---------------------------------------------------


def test_worker_i_gets_gpu_i_div_k_and_by_default_k_workers_per_gpu(
    monkeypatch: pytest.MonkeyPatch, cores: int
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")  # a scheduler's GPUs
    slots = plan_workers(None, None, 4)
    assert [s.gpus for s in slots] == [("3",)] * 4 + [("5",)] * 4
    assert [s.workers_on_gpu for s in slots] == [4] * 8
    assert [s.index for s in slots] == list(range(8))
    assert {s.threads for s in slots} == {max(1, cores // 8)}  # the cores split as before


def test_fewer_workers_fill_the_gpus_in_turn_and_share_by_how_many_are_there(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    slots = plan_workers(5, None, 4)
    assert [(s.gpus, s.workers_on_gpu) for s in slots] == [(("0",), 4)] * 4 + [(("1",), 1)]
    # --gpus-per-trial 1 says the same
    assert plan_workers(5, 1, 4) == slots


def test_one_worker_per_gpu_is_gpus_per_trial_1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert plan_workers(None, None, 1) == plan_workers(None, 1)
    assert [s.gpus for s in plan_workers(None, None, 1)] == [("0",), ("1",), ("2",), ("3",)]
    # and K = 1 leaves --gpus-per-trial K as it was: a worker per pair of GPUs
    pairs = plan_workers(None, 2, 1)
    assert pairs == plan_workers(None, 2)
    assert [(s.gpus, s.workers_on_gpu) for s in pairs] == [(("0", "1"), 1), (("2", "3"), 1)]


@pytest.mark.parametrize(
    ("visible", "args", "message"),
    [
        (
            "0,1",
            (9, None, 4),
            "workers 9 at workers_per_gpu 4 need 3 GPUs; this machine has 2 (0,1): use at "
            "most workers 8",
        ),
        (
            "0,1",
            (None, 2, 4),
            "workers_per_gpu 4 puts several one-GPU workers on each GPU; it cannot give them "
            "gpus_per_trial 2: leave gpus_per_trial out (or 1), or leave workers_per_gpu out",
        ),
        (
            "",
            (None, None, 2),
            "workers_per_gpu 2 puts workers on GPUs, and this machine has none "
            "(CUDA_VISIBLE_DEVICES=''); leave the option out to run on the CPU",
        ),
        ("0", (None, None, 0), "workers_per_gpu must be >= 1, got 0"),
    ],
    ids=["too many workers", "several GPUs per trial", "no GPU", "zero"],
)
def test_what_cannot_be_shared_is_refused_naming_the_numbers(
    monkeypatch: pytest.MonkeyPatch, visible: str, args: tuple[int | None, ...], message: str
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    with pytest.raises(SearchError) as info:
        plan_workers(*args)
    assert str(info.value) == message


# --- the memory of one GPU, shared ------------------------------------------------


def _need(spec: MLCNSpec, batch: int = 100) -> int:
    return get_cost_model("analytic").model_cost(spec, batch).memory_bytes


SPEC = MLCNSpec.from_lanes("30*mlcn1:4x1")


def test_a_worker_s_trial_must_fit_its_share_of_the_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    need = _need(SPEC)
    size = 3 * need  # the whole GPU holds the model 3 times over, all of it free
    _gpus(monkeypatch, "0", size)
    check_training_memory(SPEC, 100, "cuda:0")  # alone on the GPU
    check_training_memory(SPEC, 100, "cuda", shared_by=3)  # 1/3 is just enough
    with pytest.raises(TrainingError) as info:
        check_training_memory(SPEC, 100, "cuda", shared_by=4)
    largest = get_cost_model("analytic").model_cost(SPEC, 100).lanes[0]
    assert str(info.value) == (
        f"the 30 lanes on cuda:0 need about {format_bytes(need)} (the largest, lane 1 "
        f"(mlcn1:4x1), about {format_bytes(largest.memory_bytes)}) to train at batch 100; "
        f"this worker may use 1/4 of cuda:0's {format_bytes(size)} "
        f"({format_bytes(size // 4)}), shared with 3 other workers; use fewer or narrower "
        "lanes, a smaller --batch-size or fewer --workers-per-gpu"
    )


def test_a_trial_within_its_share_must_still_fit_what_is_free(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    need = _need(SPEC)
    _gpus(monkeypatch, "0", 4 * need)
    # the other worker holds more than its half just now
    monkeypatch.setattr(nasmlcn.hardware, "available_memory", lambda device: need // 2)
    with pytest.raises(TrainingError) as info:
        check_training_memory(SPEC, 100, "cuda:0", shared_by=2)
    assert (
        f"; this machine (cuda:0) has {format_bytes(need // 2)} available (shared with 1 "
        "other worker); use fewer or narrower lanes or a smaller --batch-size"
    ) in str(info.value)


def test_the_cpu_is_not_shared_out(monkeypatch: pytest.MonkeyPatch) -> None:
    need = _need(SPEC)
    _gpus(monkeypatch, "0", 2 * need)
    check_training_memory(SPEC, 100, "cpu", shared_by=4)  # free memory only


def test_the_train_evaluator_passes_its_worker_s_share_to_the_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import nasmlcn.search.evaluators._train as train_evaluator

    seen: list[int] = []

    def check(*args: object, shared_by: int = 1, **kwargs: object) -> None:
        seen.append(shared_by)
        raise TrainingError("stop here")

    monkeypatch.setattr(train_evaluator, "check_training_memory", check)
    config = SearchConfig(dataset="synthetic", train_limit=64, val_limit=32, run_on="cpu")
    request = EvalRequest(MLCNSpec.from_lanes("mlcn2:1x1"), trial=0, seed=0, epochs=1)
    for env, share in ((None, 1), ("4", 4)):
        if env is None:
            monkeypatch.delenv("NASMLCN_WORKERS_PER_GPU", raising=False)
        else:
            monkeypatch.setenv("NASMLCN_WORKERS_PER_GPU", env)
        evaluator = TrainEvaluator(config, DATASETS.get("synthetic"))
        with pytest.raises(TrainingError, match="stop here"):
            evaluator.evaluate(request, lambda report: EpochDecision())
        assert seen[-1] == share
    monkeypatch.setenv("NASMLCN_WORKERS_PER_GPU", "four")
    with pytest.raises(SearchError, match="NASMLCN_WORKERS_PER_GPU must be an integer >= 1, got"):
        TrainEvaluator(config, DATASETS.get("synthetic"))


# --- refused up front when K models cannot fit ------------------------------------


ONE_MODEL = (
    'kind = "homogeneous"\nlane_types = ["mlcn1"]\nwidth = [2, 2]\ndepth = [1, 1]\nlanes = [4, 4]\n'
)


@pytest.mark.parametrize(
    ("training", "batch"),
    [("", 100), ("[training]\nbatch_size = [50, 400]\n", 400)],
    ids=["the study's batch", "a searched batch"],
)
def test_the_largest_model_is_what_its_trial_s_check_predicts(
    tmp_path: Path, training: str, batch: int
) -> None:
    """A space of one model (at one or two batch sizes): its largest is that model
    at the largest batch, as the analytic cost model predicts it."""
    space = tmp_path / "one.toml"
    space.write_text(ONE_MODEL + training)
    setup = setup_search(SearchConfig(devices="1xK80", mem="12GB", space=str(space)))
    assert largest_model_memory(setup) == _need(MLCNSpec.from_lanes("4*mlcn1:2x1"), batch)


def test_the_largest_model_is_far_below_what_the_buckets_would_allow() -> None:
    """Why the models are drawn (the docstring's figures): the bucket space at 1x
    builds models far smaller than its devices' memory."""
    setup = setup_search(SearchConfig(devices="8xK80", mem="12GB", evaluator="proxy"))
    assert 0 < 10 * largest_model_memory(setup) < sum(d.memory_bytes for d in setup.devices)


def _train_setup(run_on: str = "auto") -> SearchSetup:
    return setup_search(
        SearchConfig(
            devices="1xK80", mem="12GB", evaluator="train", dataset="synthetic", run_on=run_on
        )
    )


def test_k_workers_whose_largest_models_do_not_fit_the_gpu_are_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    setup = _train_setup()
    largest = largest_model_memory(setup)
    size = int(3.5 * largest)
    _gpus(monkeypatch, "0", size)
    check_gpu_sharing(setup, plan_workers(None, None, 3))
    with pytest.raises(SearchError) as info:
        check_gpu_sharing(setup, plan_workers(None, None, 4))
    assert str(info.value) == (
        f"GPU 0 cannot hold 4 workers: the largest of 64 models drawn from this search needs "
        f"about {format_bytes(largest)} to train, and 4 of them need more than the GPU's "
        f"{format_bytes(size)}; use workers_per_gpu 3 at most, or lower flops or batch_size"
    )
    # the proxy trains nothing: nothing to refuse
    proxy = setup_search(SearchConfig(devices="1xK80", mem="12GB", evaluator="proxy"))
    check_gpu_sharing(proxy, plan_workers(None, None, 4))


def test_sharing_a_gpu_and_training_on_the_cpu_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _gpus(monkeypatch, "0")
    setup = _train_setup(run_on="cpu")
    with pytest.raises(SearchError) as info:
        check_gpu_sharing(setup, plan_workers(None, None, 2))
    assert str(info.value) == (
        "workers_per_gpu gives each worker one GPU (its cuda:0), so run_on must be auto or "
        "cuda:0, got 'cpu'"
    )


# --- a real pool ---------------------------------------------------------------------


class EnvRecorder(SearchObserver):
    """Writes the GPU and the share each worker's trials ran with (the workers are
    fresh processes: this class travels to them by its module's name)."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)

    def on_trial_end(self, outcome: object) -> None:
        names = ("CUDA_VISIBLE_DEVICES", "NASMLCN_WORKERS_PER_GPU", "OMP_NUM_THREADS")
        seen: dict[str, object] = {k: os.environ.get(k) for k in names}
        seen["torch"] = "torch" in sys.modules  # the proxy needs none: never imported
        (self.folder / f"{os.getpid()}.json").write_text(json.dumps(seen))

    def for_workers(self) -> tuple[SearchObserver | None, Callable[[], SearchObserver] | None]:
        """Each worker records its own; this process, which runs no trial, nothing."""
        return None, functools.partial(EnvRecorder, str(self.folder))


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_a_pool_puts_k_workers_on_each_gpu_and_tells_each_its_share(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")  # no such GPU: the proxy trains nothing
    config = SearchConfig(
        devices="2xK80",
        mem="12GB",
        evaluator="proxy",
        epochs=1,
        trials=6,
        storage=f"sqlite:///{tmp_path / 's.db'}",
    )
    result = run_search(config, [EnvRecorder(str(tmp_path))], workers_per_gpu=2)
    assert result.errors == []
    assert [(w["gpus"], w["workers_on_gpu"]) for w in result.workers] == [(["7"], 2)] * 2
    seen = [json.loads(p.read_text()) for p in tmp_path.glob("*.json")]
    assert seen  # at least one worker ran a trial
    threads = str(result.workers[0]["threads"])
    expected = {
        "CUDA_VISIBLE_DEVICES": "7",
        "NASMLCN_WORKERS_PER_GPU": "2",
        "OMP_NUM_THREADS": threads,  # what torch, imported by a train evaluator, takes
        "torch": False,
    }
    assert all(s == expected for s in seen)
