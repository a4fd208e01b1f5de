"""The ``bmm`` layer path (a stack's later conv layers as an unfold and one batched
matrix product, :mod:`nasmlcn.models._bmm_conv`) computes what the ``grouped`` path
(one grouped convolution a layer) computes: in float64, every output and every
parameter's gradient within ``|bmm - grouped| <= 1e-7 + 1e-5 * |grouped|`` (element
by element: ``torch.testing.assert_close(rtol=1e-5, atol=1e-7)``), for models of
several lane types (1x1, depthwise, padded 3x3 and strided layers among them), both
routings, with weight sharing, fused and lane by lane; layer by layer for every
geometry a layer can have (stride, padding, dilation, its own groups, no bias, a
folded pair, a stack of one). The state dict is the same under either path. Each
comparison is against the grouped path, and the bmm path is seen to run (a spy
counts its calls), so a wrong bmm path fails."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
import torch
from torch import nn

from nasmlcn.models import MLCN, build_model, per_lane_tensors, stack_tensors
from nasmlcn.models._bmm_conv import stacked_conv_bmm
from nasmlcn.models._conv import FoldedConv2d, conv_layers
from nasmlcn.models._fused import LAYER_PATHS, Kernels, _bmm_conv, _grouped_conv, _kernels
from nasmlcn.specs import ConvSpec, MLCNSpec

RTOL, ATOL = 1e-5, 1e-7


def _close(got: torch.Tensor | None, want: torch.Tensor | None, msg: str | None = None) -> None:
    """``|got - want| <= ATOL + RTOL * |want|``, element by element."""
    torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL, msg=msg)


@contextmanager
def _counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Calls of each layer path while inside (the paths themselves run)."""
    calls = dict.fromkeys(LAYER_PATHS, 0)

    def spy(name: str) -> Callable[[nn.Module, Kernels, torch.Tensor], torch.Tensor]:
        real = LAYER_PATHS[name]

        def run(layer: nn.Module, kernels: Kernels, h: torch.Tensor) -> torch.Tensor:
            calls[name] += 1
            return real(layer, kernels, h)

        return run

    for name in list(LAYER_PATHS):
        monkeypatch.setitem(LAYER_PATHS, name, spy(name))
    yield calls
    monkeypatch.undo()


def _run(
    model: MLCN, x: torch.Tensor, mix: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """The lanes' outputs ``(B, K, L)`` and every lane parameter's gradient of a fixed
    mix of them, by the state dict's names."""
    model.zero_grad()
    out = model.lanes(x)
    (out * mix).sum().backward()
    return out.detach(), per_lane_tensors(model, lambda p: p.grad)


def _later_layer_calls(model: MLCN, fused: bool) -> int:
    """Calls of a layer path a forward pass makes: a stack's conv layers after the
    first, once a stack (``fused``) or once a lane."""
    calls = 0
    for stack, members in model.lanes.groups():
        later = sum(1 for layer in list(stack.kind.convs)[1:] if not isinstance(layer, nn.ReLU))
        calls += later * (1 if fused else len(members))
    return calls


@pytest.mark.parametrize(
    ("lanes", "fields"),
    [
        ("2*mlcn2:4x1", {}),
        ("3*mlcn1:2x4", {}),
        ("2*mlcn2-ref:4x1", {}),  # 1x1, depthwise (no bias), padded 3x3, strided 6x6
        ("1*mlcn1:1x2", {}),  # a stack of one
        ("2*mlcn2-72:1x2,mlcn1-ref:1x2,2*mlcn1:1x1", {"routing": "classwise"}),
        ("3*mlcn2:1x2,mlcn1:1x1", {"weight_sharing": True}),
    ],
)
@pytest.mark.parametrize("fused", [True, False])
def test_bmm_equals_grouped(
    lanes: str, fields: dict[str, object], fused: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = MLCNSpec.from_lanes(lanes, **fields)
    torch.manual_seed(0)
    model = build_model(spec).double()
    assert isinstance(model, MLCN)
    model.lanes.fuse_as = "cuda"  # a GPU's rule on a CPU: every stack fused
    model.fuse_lanes = fused  # False: lane by lane, each lane a stack of one
    x = torch.rand(2, *spec.input_shape, dtype=torch.float64)
    mix = torch.randn(2, spec.num_classes, spec.num_lanes, dtype=torch.float64)
    keys = model.state_dict().keys()
    assert model.layer_path == "grouped"  # the default
    with _counted(monkeypatch) as calls:
        want, want_grads = _run(model, x, mix)
        model.layer_path = "bmm"
        got, got_grads = _run(model, x, mix)
    layers = _later_layer_calls(model, fused)
    assert layers > 0
    assert calls == {"grouped": layers, "bmm": layers}  # each path ran every later layer
    _close(got, want)
    assert got_grads.keys() == want_grads.keys()
    assert any(k.startswith("lanes.") for k in got_grads)
    for name, grad in want_grads.items():
        _close(got_grads[name], grad, name)
    assert model.state_dict().keys() == keys  # checkpoints are the same either way


def test_the_layer_path_is_no_part_of_a_checkpoint() -> None:
    spec = MLCNSpec.from_lanes("2*mlcn2-ref:1x1,mlcn1:1x1")
    torch.manual_seed(0)
    grouped = build_model(spec).double()
    bmm = build_model(spec).double()
    assert isinstance(grouped, MLCN)
    assert isinstance(bmm, MLCN)
    bmm.layer_path = "bmm"
    state = grouped.state_dict()
    assert bmm.state_dict().keys() == state.keys()
    bmm.load_state_dict(state)
    x = torch.rand(2, *spec.input_shape, dtype=torch.float64)
    _close(bmm(x).lengths, grouped(x).lengths)
    assert bmm.layer_path == "bmm"
    # a subset of the lanes (data-parallel ranks) runs the same path
    assert bmm.lanes.subset(bmm.lanes.members[0]).layer_path == "bmm"
    with pytest.raises(ValueError, match="layer_path must be one of"):
        bmm.layer_path = "conv"


def _stacked_layer(
    conv: ConvSpec, count: int, folded_from: ConvSpec | None = None
) -> tuple[nn.Module, dict[str, torch.Tensor]]:
    """A layer of ``conv``'s geometry (a folded pair, after ``folded_from``) and
    ``count`` lanes' random parameters, stacked as a lane stack keeps them."""
    layer = conv_layers([conv] if folded_from is None else [folded_from, conv])[0]
    assert folded_from is None or isinstance(layer, FoldedConv2d)  # the pair folds
    params = {
        name: stack_tensors([torch.randn(p.shape, dtype=torch.float64) for _ in range(count)])
        for name, p in layer.named_parameters()
    }
    return layer, params


LAYERS = {
    "3x3 padded": (ConvSpec(4, 6, 3, padding=1), None),
    "9x9 stride 2": (ConvSpec(4, 8, 9, stride=2), None),
    "6x6 stride 2 padded 2": (ConvSpec(3, 5, 6, stride=2, padding=2), None),
    "1x1": (ConvSpec(4, 6, 1), None),
    "depthwise, no bias": (ConvSpec(4, 4, 5, groups=4, bias=False), None),
    "2 groups, stride 2": (ConvSpec(4, 6, 3, stride=2, padding=1, groups=2), None),
    "folded 1x1 + 5x5": (ConvSpec(4, 6, 5, stride=2), ConvSpec(3, 4, 1, relu=False)),
}


@pytest.mark.parametrize("count", [1, 3])
@pytest.mark.parametrize("name", LAYERS)
def test_each_layer_geometry(name: str, count: int) -> None:
    conv, first = LAYERS[name]
    torch.manual_seed(count)
    layer, params = _stacked_layer(conv, count, first)
    channels = (first or conv).in_channels
    _compare_layer(layer, params, count * channels)


def test_dilation() -> None:
    """Dilation (no nasmlcn layer dilates, but a conv layer may)."""
    torch.manual_seed(0)
    layer = nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2)
    params = {
        name: stack_tensors([torch.randn(p.shape, dtype=torch.float64) for _ in range(2)])
        for name, p in layer.named_parameters()
    }
    _compare_layer(layer, params, 2 * 4)


def _compare_layer(layer: nn.Module, params: dict[str, torch.Tensor], channels: int) -> None:
    """The bmm path's output and gradients (the features' and every parameter's) are
    the grouped convolution's."""
    features = torch.randn(2, channels, 11, 11, dtype=torch.float64)
    features = features.contiguous(memory_format=torch.channels_last)
    results = []
    for path in (_grouped_conv, _bmm_conv):
        h = features.clone().requires_grad_()
        leaves = {n: p.clone().requires_grad_() for n, p in params.items()}
        out = path(layer, _kernels(layer, leaves, ""), h)
        assert out.is_contiguous(memory_format=torch.channels_last)
        mix = torch.linspace(-1, 1, out.numel(), dtype=torch.float64).view(out.shape)
        (out * mix).sum().backward()
        grads = {"features": h.grad, **{n: p.grad for n, p in leaves.items()}}
        results.append((out.detach(), grads))
    (want, want_grads), (got, got_grads) = results
    assert got.shape == want.shape
    _close(got, want)
    for key, grad in want_grads.items():
        _close(got_grads[key], grad, key)


def test_a_wrong_product_is_caught() -> None:
    """The comparison can fail: the lanes' kernels swapped, the bmm product differs
    from the grouped convolution."""
    torch.manual_seed(0)
    layer, params = _stacked_layer(ConvSpec(4, 6, 3, padding=1), 2)
    h = torch.randn(2, 8, 9, 9, dtype=torch.float64).contiguous(memory_format=torch.channels_last)
    weight, bias = _kernels(layer, params, "")
    want = _grouped_conv(layer, (weight, bias), h)
    swapped = stacked_conv_bmm(h, weight.flip(0), bias, (1, 1), (1, 1))
    assert not torch.allclose(swapped, want, rtol=RTOL, atol=ATOL)
    right = stacked_conv_bmm(h, weight, bias, (1, 1), (1, 1))
    _close(right, want)
