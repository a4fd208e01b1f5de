"""The training step (eager, or replayed from a CUDA graph on a GPU), batches that
live on the device, and per-lane optimizer state resumed into lane stacks.

What needs a GPU is marked ``gpu`` (``scripts/gpu_check.sh --part speed`` runs it):
graphed steps equal eager ones, and a step waits on nothing from the host."""

from __future__ import annotations

import functools
import json
import logging
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from nasmlcn.data import load_splits
from nasmlcn.models import build_model, capsule_loss, per_lane_tensors
from nasmlcn.specs import MLCNSpec
from nasmlcn.training import RunOptions, TrainConfig, make_optimizer, save_checkpoint
from nasmlcn.training._optimizer_state import restack_optimizer_state
from nasmlcn.training._step import WARMUP_STEPS, EvalStep, TrainStep, graphs_apply
from nasmlcn.training._trainer import _Sums, resident, train_epochs

# kinds interleaved: the class capsules are put back in lane order (an index on the GPU)
SPEC = MLCNSpec.from_lanes("mlcn2:1x1,mlcn1:1x1,2*mlcn2:1x1,mlcn1:1x1")


def _batches(n: int, device: str = "cpu") -> list[tuple[torch.Tensor, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    return [
        (
            torch.rand(6, 1, 28, 28, generator=g).to(device),
            torch.randint(0, 10, (6,), generator=g).to(device),
        )
        for _ in range(n)
    ]


def _run(
    graphs: bool, device: str = "cpu", steps: int = 5
) -> tuple[list[float], dict[str, torch.Tensor]]:
    torch.manual_seed(0)
    model = build_model(SPEC).to(device)
    step = TrainStep(
        model,
        make_optimizer(model.parameters(), 1e-3, torch.device(device).type),
        lambda x: x,
        5e-4,
        graphs,
    )
    losses = [float(step(x, y)[0]) for x, y in _batches(steps, device)]
    return losses, {k: v.detach().cpu() for k, v in model.state_dict().items()}


def test_a_step_trains_as_forward_loss_backward_adam() -> None:
    losses, state = _run(False)
    torch.manual_seed(0)
    model = build_model(SPEC)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    want = []
    for x, y in _batches(5):
        out = model(x, y)
        loss = capsule_loss(out.lengths, out.reconstruction, x, y).total
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        want.append(float(loss.detach()))
    assert losses == pytest.approx(want, rel=1e-6)
    for name, value in model.state_dict().items():
        torch.testing.assert_close(state[name], value)


def test_adam_is_fused_on_a_cpu_and_a_checkpoint_keeps_the_optimizer_it_was_saved_with() -> None:
    model = build_model(SPEC)
    assert make_optimizer(model.parameters(), 1e-3, "cpu").defaults["fused"] is True
    assert make_optimizer(model.parameters(), 1e-3, "cuda").defaults["fused"] is True
    assert make_optimizer(model.parameters(), 1e-3, "meta").defaults["fused"] is None
    # a run saved before training fused on a CPU resumes with the loop it started with
    loop = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = _batches(1)[0]
    out = model(x, y)
    capsule_loss(out.lengths, out.reconstruction, x, y).total.backward()
    loop.step()
    resumed = make_optimizer(model.parameters(), 1e-3, "cpu")
    resumed.load_state_dict(loop.state_dict())
    assert resumed.param_groups[0]["fused"] is None
    resumed.step()  # and steps


def test_graphs_apply_only_to_a_model_on_one_gpu() -> None:
    model = build_model(SPEC)
    assert not graphs_apply(model, torch.device("cpu"), True)
    assert not graphs_apply(model, torch.device("cuda"), False)
    assert not graphs_apply(model, torch.device("cuda:0"), True)  # its parameters are on the CPU
    assert not graphs_apply(torch.nn.Sequential(model), torch.device("cpu"), True)


def test_a_failed_capture_says_so_once_and_trains_on_eagerly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Forced on where no graph can be captured (no GPU here), the step logs one line
    at its first capture and then trains exactly as the eager step does."""
    with caplog.at_level(logging.WARNING, logger="nasmlcn.training._step"):
        forced = _run(True, steps=WARMUP_STEPS + 3)
    lines = [r.getMessage() for r in caplog.records if "CUDA graph" in r.getMessage()]
    assert len(lines) == 1, lines
    assert "running eagerly" in lines[0]
    eager = _run(False, steps=WARMUP_STEPS + 3)
    assert forced[0] == eager[0]
    for name, value in eager[1].items():
        torch.testing.assert_close(forced[1][name], value)


def test_splits_move_whole_and_batch_alike() -> None:
    splits = load_splits("synthetic", train_limit=30, val_limit=10, test_limit=10)
    moved = splits.to("cpu")
    assert moved.nbytes == splits.nbytes > 0
    a = list(splits.train.batches(8, generator=torch.Generator().manual_seed(1)))
    b = list(moved.train.batches(8, generator=torch.Generator().manual_seed(1)))
    for (xa, ya), (xb, yb) in zip(a, b, strict=True):
        assert torch.equal(xa, xb)
        assert torch.equal(ya, yb)


def _moment(optimizer: torch.optim.Optimizer, key: str, p: torch.nn.Parameter) -> torch.Tensor:
    moment: torch.Tensor = optimizer.state[p][key]
    return moment


def _per_lane_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> dict:
    """``optimizer``'s state as a model of lane modules held it: every lane's tensors,
    lane by lane, then the head's (the checkpoints before lane stacks)."""
    stacked = optimizer.state_dict()
    moments = {}
    for key in ("exp_avg", "exp_avg_sq"):
        moments[key] = per_lane_tensors(model, functools.partial(_moment, optimizer, key))
    names = sorted(
        (k for k in moments["exp_avg"] if k.startswith("lanes.")),
        key=lambda k: (int(k.split(".")[1]), list(per_lane_tensors(model)).index(k)),
    )
    names += [k for k in moments["exp_avg"] if not k.startswith("lanes.")]
    step = next(iter(stacked["state"].values()))["step"]
    state = {
        i: {"step": step.clone(), **{key: moments[key][n].clone() for key in moments}}
        for i, n in enumerate(names)
    }
    group = {**stacked["param_groups"][0], "params": list(range(len(names)))}
    return {"state": state, "param_groups": [group]}


def test_per_lane_optimizer_state_resumes_into_the_stacks(tmp_path: Path) -> None:
    config = TrainConfig(epochs=1, batch_size=10, lr_policy="exponential")
    splits = load_splits("synthetic", train_limit=30, val_limit=10)
    torch.manual_seed(0)
    model = build_model(SPEC)
    optimizer = make_optimizer(model.parameters(), 1e-3, "cpu")
    xb, yb = next(iter(splits.train.batches(10)))
    out = model(xb, yb)
    capsule_loss(out.lengths, out.reconstruction, xb, yb).total.backward()
    optimizer.step()
    old = _per_lane_state(model, optimizer)
    assert len(old["state"]) > len(list(model.parameters()))  # 5 lanes' own tensors
    restacked = restack_optimizer_state(model, old)
    now = optimizer.state_dict()
    assert restacked["state"].keys() == now["state"].keys()
    for i, want in now["state"].items():
        for key in ("exp_avg", "exp_avg_sq"):
            torch.testing.assert_close(restacked["state"][i][key], want[key])
            assert restacked["state"][i][key].stride() == want[key].stride()
    assert restack_optimizer_state(model, now) is now  # already stacked: as it is
    # and through train_epochs(..., resume=True): the per-lane checkpoint goes on
    ckpt = tmp_path / "checkpoint.pt"
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, 0.9)
    save_checkpoint(
        ckpt,
        arch=SPEC,
        model=model,
        epoch=1,
        optimizer=optimizer,
        scheduler=scheduler,
        history=[],
        train_config=config.to_dict(),
        run_id="r",
    )
    payload = torch.load(ckpt, weights_only=False)
    payload["optimizer"] = old
    payload["history"] = json.dumps(
        [
            {
                "epoch": 1,
                "train_loss": 1.0,
                "train_accuracy": 0.1,
                "val_loss": 1.0,
                "val_accuracy": 0.1,
                "seconds": 1.0,
                "eval_seconds": 1.0,
                "images_per_second": 1.0,
                "lr": 1e-3,
            }
        ]
    )
    torch.save(payload, ckpt)
    history = train_epochs(
        build_model(SPEC),
        SPEC,
        splits,
        replace(config, epochs=2),
        options=RunOptions(checkpoint_path=ckpt, resume=True),
    )
    assert [h.epoch for h in history] == [1, 2]


@pytest.mark.gpu
def test_graphs_apply_to_a_model_on_the_gpu_however_the_device_is_named() -> None:
    model = build_model(SPEC).cuda()
    assert graphs_apply(model, torch.device("cuda"), True)  # what --device cuda gives
    assert graphs_apply(model, torch.device("cuda", torch.cuda.current_device()), True)


@pytest.mark.gpu
def test_graphed_steps_equal_eager_ones_on_a_gpu() -> None:
    eager = _run(False, "cuda", steps=WARMUP_STEPS + 6)
    graphed = _run(True, "cuda", steps=WARMUP_STEPS + 6)
    assert graphed[0] == pytest.approx(eager[0], rel=1e-4, abs=1e-5)
    for name, value in eager[1].items():
        torch.testing.assert_close(graphed[1][name], value, rtol=1e-3, atol=1e-5)


@pytest.mark.gpu
def test_a_graphed_step_on_resident_batches_never_waits_on_the_host() -> None:
    """After warm-up and capture, cutting a shuffled, augmented batch on the GPU and
    training on it make no host synchronisation (torch raises on one)."""
    from nasmlcn.training import AUGMENTATIONS

    device = torch.device("cuda")
    splits = resident(load_splits("synthetic", train_limit=200, val_limit=20), device)
    assert splits.train.images.device.type == "cuda"
    torch.manual_seed(0)
    model = build_model(SPEC).to(device)
    assert graphs_apply(model, device, True)
    step = TrainStep(
        model, make_optimizer(model.parameters(), 1e-3, "cuda"), splits.train.inputs, 5e-4, True
    )
    shift = AUGMENTATIONS.get("shift").apply
    assert shift is not None
    g = torch.Generator().manual_seed(0)
    batches = splits.train.batches(20, generator=g)
    for _ in range(WARMUP_STEPS + 1):  # warm-up and capture
        x, y = next(batches)
        step(x, y)
    sums = _Sums()
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        for x, y in batches:
            loss, lengths = step(shift(x, g), y)
            sums.add(loss, lengths, y)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert step.capture_seconds > 0
    assert sums.read()[0] > 0


@pytest.mark.gpu
def test_graphed_evaluation_equals_eager() -> None:
    torch.manual_seed(0)
    model = build_model(SPEC).cuda().eval()
    batches = _batches(WARMUP_STEPS + 3, "cuda")
    eager = EvalStep(model, lambda x: x, 5e-4, False)
    graphed = EvalStep(model, lambda x: x, 5e-4, True)
    for x, y in batches:
        want = [t.clone() for t in eager(x, y)]
        got = graphed(x, y)
        torch.testing.assert_close(got[0], want[0], rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(got[1], want[1], rtol=1e-4, atol=1e-6)
    assert graphed.capture_seconds > 0


@pytest.mark.gpu
def test_training_on_a_gpu_with_graphs_equals_it_without(caplog: pytest.LogCaptureFixture) -> None:
    """The whole trainer: resident splits, a graph for the full batches and one for
    each epoch's last, smaller batch (captured in epoch 3), graphed validation."""
    splits = load_splits("synthetic", train_limit=130, val_limit=60)
    config = TrainConfig(
        epochs=4, batch_size=20, eval_batch_size=20, device="cuda", augment="shift"
    )

    def run(graphs: bool) -> list[tuple[float, float]]:
        torch.manual_seed(0)
        history = train_epochs(build_model(SPEC), SPEC, splits, replace(config, cuda_graphs=graphs))
        return [(h.train_loss, h.val_accuracy) for h in history]

    with caplog.at_level(logging.INFO, logger="nasmlcn.training._step"):
        graphed = run(True)
    captured = [r.getMessage() for r in caplog.records if "captured" in r.getMessage()]
    assert any("training step at batch 20" in m for m in captured), captured
    assert any("training step at batch 10" in m for m in captured), captured
    assert any("evaluation step at batch 20" in m for m in captured), captured
    eager = run(False)
    for (loss_g, acc_g), (loss_e, acc_e) in zip(graphed, eager, strict=True):
        assert loss_g == pytest.approx(loss_e, rel=1e-3)
        assert acc_g == pytest.approx(acc_e, abs=0.05)
