"""Which local device runs each target device's lanes (pure Python)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from nasmlcn.errors import DeviceError
from nasmlcn.hardware import LocalDevice, parse_devices
from nasmlcn.parallel import is_spread, lane_devices, map_targets, parse_run_on, rank_assignment

CPU = LocalDevice("cpu", "Some CPU", 8 << 30, "cpu", 2)
H100S = [
    CPU,
    *(LocalDevice(f"cuda:{i}", "NVIDIA H100 80GB HBM3", 80 << 30, "H100") for i in (0, 1)),
]


def test_auto_maps_present_gpu_kinds_in_order() -> None:
    assert map_targets(parse_devices("2xH100"), "auto", H100S) == ("cuda:0", "cuda:1")


def test_auto_is_none_when_targets_are_absent() -> None:
    assert map_targets(parse_devices("2xK80"), "auto", H100S) is None
    assert map_targets(parse_devices("3xH100"), "auto", H100S) is None  # one too many
    assert map_targets(parse_devices("1xH100"), "auto", [CPU]) is None


def test_cpu_targets_map_to_the_cpu() -> None:
    assert map_targets(parse_devices("2xcpu"), "auto", [CPU]) == ("cpu", "cpu")
    assert map_targets(parse_devices("1xH100,1xcpu"), "auto", H100S) == ("cuda:0", "cpu")


def test_explicit_lists_wrap_around() -> None:
    targets = parse_devices("3xK80")
    assert map_targets(targets, "cuda:0,cuda:1") == ("cuda:0", "cuda:1", "cuda:0")
    assert map_targets(targets, "cpu") == ("cpu",) * 3


def test_lane_devices_and_spread() -> None:
    mapped = ("cuda:0", "cuda:1")
    assert lane_devices((1, 0, 1), mapped) == ("cuda:1", "cuda:0", "cuda:1")
    assert is_spread(("cuda:0", "cuda:1"))
    assert not is_spread(("cpu", "cpu"))
    assert rank_assignment((0, 1, 2, 3, 2), 2) == (0, 1, 0, 1, 0)


@pytest.mark.parametrize("text", ["", " , ", "auto,cuda:0"])
def test_bad_run_on(text: str) -> None:
    with pytest.raises(DeviceError):
        parse_run_on(text)


def test_import_does_not_load_torch() -> None:
    code = (
        "import sys, nasmlcn.parallel, nasmlcn.parallel._launch, nasmlcn.training._parallel, "
        "nasmlcn.training._train; "
        "assert 'torch' not in sys.modules, 'torch imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
