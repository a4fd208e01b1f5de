"""Unknown keys in the files a user writes are refused with a "did you mean", by
every reader (each search-space kind, recipes, device files, calibration files),
at the top level and in nested tables; and every built-in file still loads."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nasmlcn._toml import check_keys, read_toml
from nasmlcn.costs import Calibration, CostContext, LaneSample
from nasmlcn.errors import CalibrationError, DeviceError, NasmlcnError, SearchError
from nasmlcn.hardware import read_catalog_file
from nasmlcn.reproduce import all_recipes, find_recipe
from nasmlcn.search import SearchConfig, load_search_recipe
from nasmlcn.search.spaces import SPACE_KINDS, load_space
from nasmlcn.search.spaces._values import COMMON_KEYS
from nasmlcn.specs import LaneSpec
from tests.conftest import ROOT

SPACES = ROOT / "search_spaces"
TRAINING = "\n[training]\nlr = [1e-4, 3e-3]\nbatch_size = [50, 100]\n"
"""A valid ``[training]`` table, appended to a built-in space (none has one open)."""


def _calibration_json() -> str:
    """A valid calibration file's text, with one measured lane."""
    calibration = Calibration(
        device="cpu",
        speed=0.15,
        context=CostContext(batch_size=100),
        threads=2,
        time_coefficients=(1.0,) * len(Calibration.time_features),  # one per feature
        memory_coefficients=(1.0,) * len(Calibration.memory_features),
        samples=(LaneSample(LaneSpec("mlcn1", 1, 1), 0.01, 10**6),),
    )
    return calibration.to_json()


def _rename_toml(text: str, old: str, new: str, *, after: str = "") -> str:
    """``text`` with the first ``old = ...`` line (after the line ``after``) keyed ``new``."""
    start = text.index(after) if after else 0
    head, tail = text[:start], text[start:]
    tail, count = re.subn(rf"(?m)^{re.escape(old)}(\s*=)", rf"{new}\1", tail, count=1)
    assert count == 1, (old, after)
    return head + tail


def _rename_json(text: str, path: tuple[str | int, ...], new: str) -> str:
    """``text`` (JSON) with the key at ``path`` renamed to ``new``."""
    data = json.loads(text)
    *parents, old = path
    table = data
    for part in parents:
        table = table[part]
    assert isinstance(old, str)
    assert old in table
    table[new] = table.pop(old)
    return json.dumps(data, indent=2)


@dataclass(frozen=True)
class Case:
    """A built-in (or valid) file, one key renamed, and what the reader must say."""

    reader: str
    source: Callable[[], str]
    rename: Callable[[str], str]
    bad: str
    good: str
    inside: str
    load: Callable[[Path], Any]
    error: type[NasmlcnError]
    suffix: str = ".toml"


def _space(
    reader: str,
    source: Callable[[], str],
    rename: Callable[[str], str],
    bad: str,
    good: str,
    inside: str = "",
) -> Case:
    """A search-space case: read with ``load_space``, refused with ``SearchError``."""
    return Case(
        reader, source, rename, bad, good, inside, lambda p: load_space(str(p)), SearchError
    )


def _builtin(path: Path, extra: str = "") -> Callable[[], str]:
    return lambda: path.read_text() + extra


def _load_recipe(path: Path) -> Any:
    return load_search_recipe(path)


CASES = [
    # search spaces, one per kind: a key of the kind itself, a common one, [training]
    _space(
        "buckets",
        _builtin(SPACES / "mlcn-buckets.toml"),
        lambda t: _rename_toml(t, "width", "widht"),
        "widht",
        "width",
    ),
    _space(
        "buckets",
        _builtin(SPACES / "mlcn-buckets.toml"),
        lambda t: _rename_toml(t, "lane_types", "lane_type"),
        "lane_type",
        "lane_types",
    ),
    _space(
        "buckets",
        _builtin(SPACES / "mlcn-buckets.toml", TRAINING),
        lambda t: _rename_toml(t, "batch_size", "bacth_size", after="[training]"),
        "bacth_size",
        "batch_size",
        "[training]",
    ),
    _space(
        "buckets",
        _builtin(SPACES / "mlcn-buckets.toml", TRAINING),
        lambda t: t.replace("[training]", "[trainig]"),
        "trainig",
        "training",
    ),
    _space(
        "thesis",
        _builtin(SPACES / "mlcn-thesis.toml"),
        lambda t: _rename_toml(t, "kind", "knd"),  # no kind: named before its absence
        "knd",
        "kind",
    ),
    _space(
        "homogeneous",
        _builtin(SPACES / "mlcn-homogeneous.toml"),
        lambda t: _rename_toml(t, "lanes", "lanse"),
        "lanse",
        "lanes",
    ),
    _space(
        "homogeneous",
        _builtin(SPACES / "mlcn-homogeneous.toml", TRAINING),
        lambda t: _rename_toml(t, "lr", "lrr", after="[training]"),
        "lrr",
        "lr",
        "[training]",
    ),
    _space(
        "table",
        _builtin(SPACES / "mlcn-table.toml"),
        lambda t: _rename_toml(t, "models", "modles"),
        "modles",
        "models",
    ),
    _space(
        "table",
        _builtin(SPACES / "mlcn-table.toml", TRAINING),
        lambda t: _rename_toml(t, "batch_size", "batch_sizes", after="[training]"),
        "batch_sizes",
        "batch_size",
        "[training]",
    ),
    _space(
        "thesis",
        _builtin(SPACES / "mlcn-thesis.toml"),
        lambda t: _rename_toml(t, "max_lanes_per_device", "max_lane_per_device"),
        "max_lane_per_device",
        "max_lanes_per_device",
    ),
    _space(
        "thesis",
        _builtin(SPACES / "mlcn-thesis.toml", TRAINING),
        lambda t: _rename_toml(t, "lr", "lrs", after="[training]"),
        "lrs",
        "lr",
        "[training]",
    ),
    # recipes: an option, and an option inside [sweep]
    Case(
        "recipe",
        _builtin(ROOT / "studies" / "thesis-fig6.2.toml"),
        lambda t: _rename_toml(t, "epochs", "epoch"),
        "epoch",
        "epochs",
        "",
        _load_recipe,
        SearchError,
    ),
    Case(
        "recipe",
        _builtin(ROOT / "studies" / "thesis-fig6.2.toml"),
        lambda t: _rename_toml(t, "flops", "flop", after="[sweep]"),
        "flop",
        "flops",
        "[sweep]",
        _load_recipe,
        SearchError,
    ),
    # device files: the top level names device kinds (any name); each kind's table
    Case(
        "device file",
        _builtin(ROOT / "nasmlcn" / "hardware" / "devices.toml"),
        lambda t: _rename_toml(t, "speed", "sped", after="[P100]"),
        "sped",
        "speed",
        "[P100]",
        read_catalog_file,
        DeviceError,
    ),
    Case(
        "device file",
        _builtin(ROOT / "nasmlcn" / "hardware" / "devices.toml"),
        lambda t: _rename_toml(t, "cost_model", "costmodel", after="[capsacc]"),
        "costmodel",
        "cost_model",
        "[capsacc]",
        read_catalog_file,
        DeviceError,
    ),
    # calibration files (JSON): the top level, its context, a sample
    Case(
        "calibration file",
        _calibration_json,
        lambda t: _rename_json(t, ("threads",), "thread"),
        "thread",
        "threads",
        "",
        Calibration.load,
        CalibrationError,
        ".json",
    ),
    Case(
        "calibration file",
        _calibration_json,
        lambda t: _rename_json(t, ("context", "batch_size"), "batch_sise"),
        "batch_sise",
        "batch_size",
        "context",
        Calibration.load,
        CalibrationError,
        ".json",
    ),
    Case(
        "calibration file",
        _calibration_json,
        lambda t: _rename_json(t, ("samples", 0, "seconds"), "second"),
        "second",
        "seconds",
        "samples[0]",
        Calibration.load,
        CalibrationError,
        ".json",
    ),
]


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c.reader}-{c.inside or 'top'}-{c.bad}" for c in CASES]
)
def test_a_renamed_key_is_refused_with_did_you_mean(tmp_path: Path, case: Case) -> None:
    path = tmp_path / f"mine{case.suffix}"
    path.write_text(case.source())
    case.load(path)  # valid before the rename: the error below is the rename's
    path.write_text(case.rename(case.source()))
    with pytest.raises(case.error) as err:
        case.load(path)
    message = str(err.value)
    assert "\n" not in message
    assert str(path) in message
    inside = f" in {case.inside}" if case.inside else ";"
    assert f"unknown key {case.bad!r}{inside}" in message
    assert f"did you mean {case.good!r}" in message or f"or {case.good!r}" in message
    assert "known keys: " in message


def test_every_space_kind_and_every_reader_has_a_case() -> None:
    assert {c.reader for c in CASES} >= {*SPACE_KINDS.names(), "recipe", "device file"}
    assert {c.reader for c in CASES if c.inside} >= {*SPACE_KINDS.names(), "recipe"}


def test_check_keys_names_the_key_the_table_and_every_known_key() -> None:
    known = ("lr", "batch_size")
    with pytest.raises(SearchError) as err:
        check_keys({"lr": 1, "bacth_size": 2}, known, "f 'x.toml'", SearchError, inside="[t]")
    assert str(err.value) == (
        "f 'x.toml': unknown key 'bacth_size' in [t]; did you mean 'batch_size'? "
        "(known keys: lr, batch_size)"
    )
    with pytest.raises(SearchError) as err:
        check_keys({"momentum": 0.9}, known, "f 'x.toml'", SearchError)
    assert str(err.value) == "f 'x.toml': unknown key 'momentum'; known keys: lr, batch_size"
    check_keys({"batch-size": 1}, known, "", SearchError, fold=lambda k: k.replace("-", "_"))


def test_a_recipe_takes_options_spelled_with_dashes_and_suggests_them(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text("train-limit = 50\nval_limit = 20\n[sweep]\nprune-threshold = [0.5, 0.9]\n")
    options, sweep, _ = load_search_recipe(path)
    assert options == {"train_limit": 50, "val_limit": 20}
    assert sweep == {"prune_threshold": [0.5, 0.9]}
    path.write_text("trian-limit = 50\n")
    with pytest.raises(SearchError, match="unknown key 'trian-limit'; did you mean 'train_limit'"):
        load_search_recipe(path)
    path.write_text("train_limit = 10\ntrain-limit = 20\n")  # one would silently win
    with pytest.raises(SearchError, match="'train_limit' and 'train-limit' are one option"):
        load_search_recipe(path)
    path.write_text("description = 5\n")
    with pytest.raises(SearchError, match="description must be text, got 5"):
        load_search_recipe(path)


class _Recording(Mapping[str, Any]):
    """A parsed file that remembers every key its reader asked for."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = dict(data)
        self.asked: set[str] = set()

    def __getitem__(self, key: str) -> Any:
        self.asked.add(key)
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        self.asked.add(key)
        return self._data.get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.asked.add(key)
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


@pytest.mark.parametrize("kind", list(SPACE_KINDS.names()))
def test_each_space_kind_reads_only_the_keys_it_declares(kind: str) -> None:
    """A key read but not declared would be refused as unknown in every file that
    sets it; this finds it even when no built-in file does."""
    space_cls = SPACE_KINDS.get(kind)
    data = _Recording({"models": ["mlcn1-2x4"]} if kind == "table" else {})
    space_cls("x", data, "x.toml")
    declared = {*COMMON_KEYS, *space_cls.keys}
    assert data.asked, "the recording saw no reads"
    assert data.asked <= declared, sorted(data.asked - declared)


def _builtin_toml_files() -> list[Path]:
    skip = {"pyproject.toml"}
    return sorted(
        p
        for p in ROOT.rglob("*.toml")
        if p.name not in skip
        and not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
        and "build" not in p.relative_to(ROOT).parts
    )


def test_every_built_in_toml_file_loads() -> None:
    files = _builtin_toml_files()
    readers = {"search_spaces": 0, "studies": 0, "reproduce": 0, "hardware": 0}
    for path in files:
        folder = path.relative_to(ROOT).parts[0]
        if folder == "search_spaces":
            space = load_space(str(path))
            assert space.kind == read_toml(path, "space", SearchError)["kind"]
            readers["search_spaces"] += 1
        elif folder == "studies" and "reproduce" in read_toml(path, "recipe", SearchError):
            # a seed result of `nasmlcn reproduce` (a search one is loaded again below)
            assert find_recipe(path.stem).path == path
            readers["reproduce"] += 1
            if find_recipe(path.stem).is_search:
                load_search_recipe(path)
        elif folder == "studies":
            options, sweep, _ = load_search_recipe(path)
            config = SearchConfig(**options)
            for key, values in sweep.items():
                for value in values:
                    config.with_overrides(**{key: value})
            load_space(config.space)
            readers["studies"] += 1
        elif path == ROOT / "nasmlcn" / "hardware" / "devices.toml":
            assert "K80" in read_catalog_file(path)
            readers["hardware"] += 1
        else:
            pytest.fail(f"{path}: a TOML file that no test reads; add it here")
    assert readers["search_spaces"] == len(list(SPACES.glob("*.toml"))) >= 4
    assert readers["studies"] >= 1
    assert readers["reproduce"] == len(all_recipes())
    assert readers["hardware"] == 1


def test_a_calibration_file_declares_exactly_the_keys_it_writes() -> None:
    from nasmlcn.costs._calibration_file import _KEYS

    assert sorted(json.loads(_calibration_json())) == sorted(_KEYS)
