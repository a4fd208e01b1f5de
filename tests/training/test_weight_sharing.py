"""Weight sharing (FasTrCaps sec. IV-D, Alg. 4): one vote transform per capsule
channel, shared by its capsules at every position of the grid.

Oracle: the model without sharing whose per-capsule transforms are the shared
ones repeated over the positions computes the same outputs, and each shared
transform's gradient is the sum of its positions' gradients there.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from nasmlcn.costs import get_cost_model
from nasmlcn.data import DATASETS
from nasmlcn.errors import SpecError
from nasmlcn.models import build_model, capsule_loss, count_parameters, per_lane_tensors
from nasmlcn.specs import CapsNetSpec, MLCNSpec, arch_from_dict
from nasmlcn.training import load_checkpoint, resolve_arch
from tests.conftest import run_cli


def _vote_weights(
    model: torch.nn.Module, of: Callable[[torch.nn.Parameter], torch.Tensor | None] = lambda p: p
) -> dict[str, torch.Tensor]:
    """The vote transforms (the only 3-D tensors of a lane or a CapsNet: convolutions
    are 4-D, linear 2-D), or what ``of`` makes of them, named lane by lane."""
    values = per_lane_tensors(model, of)
    return {name: values[name] for name, t in per_lane_tensors(model).items() if t.dim() == 3}


def _check_against_unshared(shared_spec: MLCNSpec | CapsNetSpec) -> None:
    """The shared model equals the unshared one holding its transforms at every
    position, forward and backward."""
    torch.manual_seed(0)
    shared = build_model(shared_spec)
    plain = build_model(replace(shared_spec, weight_sharing=False))
    votes, plain_votes = _vote_weights(shared), _vote_weights(plain)
    assert list(votes) == list(plain_votes)
    state = shared.state_dict()
    for name, weight in votes.items():
        channels, n = weight.shape[0], plain_votes[name].shape[0]
        assert channels < n
        assert n % channels == 0
        # capsule n = p * G + g (position-major) uses the transform of channel g
        state[name] = torch.stack([weight[i % channels] for i in range(n)]).detach().clone()
    plain.load_state_dict(state)
    x = torch.rand(3, *shared_spec.input_shape)
    y = torch.tensor([0, 1, 2])
    out_a, out_b = shared(x, y), plain(x, y)
    assert torch.allclose(out_a.lengths, out_b.lengths, atol=1e-6)
    capsule_loss(out_a.lengths, out_a.reconstruction, x, y).total.backward()
    capsule_loss(out_b.lengths, out_b.reconstruction, x, y).total.backward()
    grads, plain_grads = (
        _vote_weights(shared, lambda p: p.grad),
        _vote_weights(plain, lambda p: p.grad),
    )
    assert grads.keys() == plain_grads.keys() == votes.keys()
    for name, grad in grads.items():
        plain_grad = plain_grads[name]
        summed = plain_grad.view(-1, *grad.shape).sum(dim=0)  # over the positions
        assert torch.allclose(grad, summed, atol=1e-6)


def test_mlcn_lanes_share_one_transform_per_capsule_channel() -> None:
    spec = MLCNSpec("mlcn1:1x1,mlcn2:2x1,mlcn1:1x2", decoder="reduced", weight_sharing=True)
    _check_against_unshared(spec)
    classwise = MLCNSpec("mlcn2:1x1,mlcn1:1x1", routing="classwise", weight_sharing=True)
    _check_against_unshared(classwise)


def test_capsnet_shares_the_digit_capsule_transforms_over_the_6x6_grid() -> None:
    small = CapsNetSpec(conv_channels=16, primary_channels=4, class_dim=4, weight_sharing=True)
    _check_against_unshared(small)


def test_capsnet_parameters_drop_as_in_fastrcaps() -> None:
    # FasTrCaps sec. V-B: 8.2 M -> 6.7 M (a reduction of more than 15 %).
    full = count_parameters(build_model(CapsNetSpec()))
    shared = count_parameters(build_model(CapsNetSpec(weight_sharing=True)))
    assert round(full / 1e6, 1) == 8.2
    assert round(shared / 1e6, 1) == 6.8
    assert 0.15 < 1 - shared / full < 0.2


@pytest.mark.parametrize("lanes", ["mlcn1:2x1,mlcn2:3x2", "mlcn2:1x3,mlcn1:1x1,mlcn1:3x1"])
@pytest.mark.parametrize("decoder", ["full", "none"])
def test_the_cost_models_count_the_shared_parameters(lanes: str, decoder: str) -> None:
    spec = MLCNSpec(lanes, decoder=decoder, weight_sharing=True)
    model = build_model(spec)
    cost = get_cost_model("analytic").model_cost(spec)
    tensors = per_lane_tensors(model)
    lane_params = [
        sum(t.numel() for k, t in tensors.items() if k.startswith(f"lanes.{i}."))
        for i in range(spec.num_lanes)
    ]
    assert [c.params for c in cost.lanes] == lane_params
    unshared = get_cost_model("analytic").model_cost(MLCNSpec(lanes, decoder=decoder))
    assert all(a.params < b.params for a, b in zip(cost.lanes, unshared.lanes, strict=True))
    assert all(
        a.memory_bytes < b.memory_bytes for a, b in zip(cost.lanes, unshared.lanes, strict=True)
    )


def test_weight_sharing_is_part_of_the_arch_spec() -> None:
    spec = MLCNSpec("mlcn1:1x1", weight_sharing=True)
    assert arch_from_dict(json.loads(json.dumps(spec.to_dict()))) == spec
    caps = CapsNetSpec(weight_sharing=True)
    assert arch_from_dict(caps.to_dict()) == caps
    old = {k: v for k, v in MLCNSpec("mlcn1:1x1").to_dict().items() if k != "weight_sharing"}
    assert arch_from_dict(old).weight_sharing is False  # files written before the field
    with pytest.raises(SpecError, match="weight_sharing must be true or false"):
        MLCNSpec("mlcn1:1x1", weight_sharing=1)  # type: ignore[arg-type]
    info = DATASETS.get("synthetic")
    assert resolve_arch(info, model="capsnet", weight_sharing=True) == replace_capsnet(info)
    with pytest.raises(SpecError, match="weight_sharing cannot be combined with arch"):
        resolve_arch(info, arch="x.json", weight_sharing=True)


def replace_capsnet(info: object) -> CapsNetSpec:
    from nasmlcn.training import arch_for_dataset

    fitted = arch_for_dataset(CapsNetSpec(), info, strict=False)  # type: ignore[arg-type]
    assert isinstance(fitted, CapsNetSpec)
    return replace(fitted, weight_sharing=True)


@pytest.mark.slow  # 14 s; the library tests in this file cover weight sharing
def test_train_weight_sharing_option(tmp_path: Path) -> None:
    args = ["train", "--dataset", "synthetic", "--lanes", "mlcn1:1x1", "--decoder", "none"]
    args += ["--epochs", "1", "--train-limit", "20", "--val-limit", "10", "--test-limit", "10"]
    shared = run_cli(*args, "--weight-sharing", "--out", str(tmp_path), "--json")
    assert shared.returncode == 0, shared.stderr
    report = json.loads(shared.stdout)
    spec = arch_from_dict(report["arch"])
    assert isinstance(spec, MLCNSpec)
    assert spec.weight_sharing is True
    assert report["params"] < count_parameters(build_model(replace(spec, weight_sharing=False)))
    # arch.json and the checkpoint keep it (a resume without it is another model)
    assert json.loads((tmp_path / "arch.json").read_text())["weight_sharing"] is True
    assert load_checkpoint(tmp_path / "checkpoint.pt")["arch"] == spec
