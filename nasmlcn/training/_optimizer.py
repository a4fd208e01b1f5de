"""The optimizer every training run uses: Adam, fused on a GPU."""

from __future__ import annotations

from collections.abc import Iterable

import torch


def make_optimizer(
    params: Iterable[torch.nn.Parameter], lr: float, device_type: str
) -> torch.optim.Adam:
    """Adam over ``params`` as training runs it on a ``device_type`` device.

    On a GPU it is torch's fused Adam: one kernel launch updates every tensor of a
    device and dtype (the per-tensor loop launched a dozen kernels per parameter
    tensor: 13.6 ms of a 49.7 ms step for a 58-lane model on an H100). On a CPU,
    torch's default (a loop over the tensors), whose results the CPU runs and tests
    have always had.
    """
    return torch.optim.Adam(params, lr=lr, fused=True if device_type == "cuda" else None)
