"""Device catalog, --devices syntax and memory sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasmlcn.errors import DeviceError
from nasmlcn.hardware import (
    DeviceSpec,
    format_devices,
    load_catalog,
    parse_devices,
    parse_size,
    read_catalog_file,
)
from nasmlcn.hardware._detect import match_kind

GIB = 2**30


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12GB", 12 * 10**9),
        ("12GiB", 12 * GIB),
        ("12000MB", 12 * 10**9),
        ("512MiB", 512 * 2**20),
        ("12 gib", 12 * GIB),
        ("1.5GiB", 3 * GIB // 2),
        ("4096", 4096),
        (1024, 1024),
    ],
)
def test_sizes(text: str | int, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("12XB", "unknown unit 'XB'"),
        ("0GB", "more than 0 bytes"),
        ("-3GiB", "more than 0 bytes"),
        ("GB", "expected a number and a unit"),
        ("twelve", "expected a number and a unit"),
    ],
)
def test_bad_sizes_name_the_value_and_the_units(text: str, message: str) -> None:
    with pytest.raises(DeviceError, match=message) as err:
        parse_size(text, what="--mem")
    assert repr(text) in str(err.value)
    assert "--mem" in str(err.value)


def test_catalog_has_the_required_kinds_with_the_thesis_speeds() -> None:
    catalog = load_catalog()
    for name in ("K80", "M40", "P100", "V100", "T4", "A100", "H100", "H200", "cpu"):
        kind = catalog[name]
        assert kind.memory_bytes > 0
        assert kind.peak_flops > 0
        assert kind.bandwidth_bytes_per_s > 0
        assert kind.source
    assert [catalog[n].speed for n in ("K80", "M40", "P100", "V100")] == [1.0, 3.1, 4.2, 6.0]
    assert catalog["k80"] is catalog["K80"]  # case-insensitive


def test_device_specs() -> None:
    pool = parse_devices("8xK80")
    assert len(pool) == 8
    assert {d.kind for d in pool} == {"K80"}
    assert [d.index for d in pool] == list(range(8))
    assert pool[0].memory_bytes == 12 * GIB
    assert pool[0].name == "K80:0"
    assert parse_devices("K80") == (DeviceSpec.of(load_catalog()["K80"], 0),)
    mix = parse_devices("1xK80,1xM40,1xP100,1xV100")
    assert [d.speed for d in mix] == [1.0, 3.1, 4.2, 6.0]
    assert format_devices(mix) == "1xK80,1xM40,1xP100,1xV100"
    cpus = parse_devices("4xcpu", mem="512MiB")
    assert len(cpus) == 4
    assert all(d.memory_bytes == 512 * 2**20 for d in cpus)
    assert all(d.memory_bytes == 12 * 10**9 for d in parse_devices("2xK80,2xV100", mem="12GB"))
    assert format_devices(parse_devices("2xK80,V100,3xcpu")) == "2xK80,1xV100,3xcpu"
    assert format_devices(parse_devices("8XK80")) == "8xK80"  # as 8xk80 is


@pytest.mark.parametrize(
    ("text", "mem", "message"),
    [
        ("8xK8O", None, "unknown device 'K8O'; did you mean 'K80'"),
        ("4xV10", None, "did you mean 'V100'"),
        ("0xK80", None, "count must be >= 1, got 0"),
        ("-2xK80", None, "count must be >= 1, got -2"),
        ("8x", None, "invalid device '8x'"),
        ("", None, "no devices given"),
        ("8xK80", "12XB", "unknown unit"),
        ("8xK80", "0GB", "more than 0 bytes"),
        # refused before the devices are built (a billion took minutes and gigabytes)
        ("999999999xK80", None, "too many devices in '999999999xK80': at most 4096"),
        ("4000xK80,100xV100", None, "at most 4096"),
    ],
)
def test_bad_device_specs(text: str, mem: str | None, message: str) -> None:
    with pytest.raises(DeviceError, match=message):
        parse_devices(text, mem=mem)


@pytest.mark.parametrize("mem", ["12", " 12 ", "1.5", 12])
def test_mem_without_a_unit_is_refused_not_read_as_bytes(mem: str | int) -> None:
    number = str(mem).strip()
    with pytest.raises(DeviceError) as err:
        parse_devices("2xK80", mem=mem)
    assert str(err.value).startswith(
        f"--mem {number}: give a unit, e.g. {number}GB or {number}GiB (units: B, KB,"
    )
    assert parse_devices("2xK80", mem="12B")[0].memory_bytes == 12  # bytes, said so
    assert parse_size("12") == 12  # elsewhere (device files) a bare number is still bytes


def test_device_file_extends_and_overrides_the_catalog(tmp_path: Path) -> None:
    path = tmp_path / "my.toml"
    path.write_text(
        '[MI250]\nmemory = "64GiB"\npeak_flops = 47.9e12\nbandwidth = 1.6e12\nspeed = 12.0\n'
        'source = "mine"\n\n[K80]\nmemory = "11GiB"\npeak_flops = 4.37e12\nbandwidth = 240e9\n'
        "speed = 1.0\n"
    )
    catalog = load_catalog(path)
    assert catalog["MI250"].speed == 12.0
    assert catalog["K80"].memory_bytes == 11 * GIB
    assert "V100" in catalog  # the built-ins stay
    pool = parse_devices("2xMI250,1xK80", catalog=catalog)
    assert [d.kind for d in pool] == ["MI250", "MI250", "K80"]
    assert load_catalog()["K80"].memory_bytes == 12 * GIB  # the built-in is not changed


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('[X]\nmemory = "1GB"\npeak_flops = 1e12\nbandwidth = 1e11\n', "misses speed"),
        (
            '[X]\nmemory = "1GB"\npeak_flops = 1e12\nbandwidth = 1e11\nspeed = 1\ncolour = 2\n',
            r"unknown key 'colour' in \[X\]",
        ),
        ('[X]\nmemory = "1XB"\npeak_flops = 1e12\nbandwidth = 1e11\nspeed = 1\n', "unknown unit"),
        ('[X]\nmemory = "1GB"\npeak_flops = 1e12\nbandwidth = 1e11\nspeed = 0\n', "speed must be"),
        ("[X\n", "not valid TOML"),
        (
            '["2xA,B"]\nmemory = "1GB"\npeak_flops = 1e12\nbandwidth = 1e11\nspeed = 1\n',
            r"\[2xA,B\] is not a device name devices can use",
        ),
        (
            '[""]\nmemory = "1GB"\npeak_flops = 1e12\nbandwidth = 1e11\nspeed = 1\n',
            "not a device name",
        ),
        (
            '[X]\nmemory = "1e400GB"\npeak_flops = 1e12\nbandwidth = 1e11\nspeed = 1\n',
            "'1e400GB': it must be a finite size",
        ),
        (
            '[X]\nmemory = "1GB"\npeak_flops = 1e12\nbandwidth = 1e11\nspeed = 1e-320\n',
            r"speed \(relative to a K80\) must be 1e-06...1e\+06, got 1e-320",
        ),
        (
            "[X]\nmemory = 4\npeak_flops = 1e12\nbandwidth = 1e11\nspeed = 1\n",
            r"memory of \[X\] 4: give a unit, e.g. 4GB",
        ),
    ],
)
def test_bad_device_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(content)
    with pytest.raises(DeviceError, match=message) as err:
        read_catalog_file(path)
    assert "bad.toml" in str(err.value)
    with pytest.raises(DeviceError, match="does not exist"):
        read_catalog_file(tmp_path / "missing.toml")


def test_local_device_names_match_catalog_kinds() -> None:
    catalog = load_catalog()
    assert match_kind("NVIDIA H100 80GB HBM3", catalog) == "H100"
    assert match_kind("Tesla V100-SXM2-16GB", catalog) == "V100"
    assert match_kind("Tesla K80", catalog) == "K80"
    assert match_kind("NVIDIA GeForce RTX 4090", catalog) is None


def test_sizes_print_without_exponents() -> None:
    from nasmlcn.hardware import format_bytes

    assert format_bytes(1010 * 2**30) == "1010 GiB"  # was '1.01e+03 GiB'
    assert format_bytes(567 * 2**30) == "567 GiB"
    assert format_bytes(int(1.5 * 2**20)) == "1.5 MiB"
