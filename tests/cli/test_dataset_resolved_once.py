"""``--dataset`` is resolved once per command (issue 80): a command opens its data
once (:func:`~nasmlcn.data.open_dataset`) and every later layer takes the
``DatasetInfo`` it returned, which carries the data directory, the image size and
the source path. Counted, in process, for a one-trial search on a user's own
images, a proxy search on a built-in set and ``train`` on a user's images: one
opening each, the user's value asked "is this a path" once and its size parsed
once, the default data directory looked up once, and each of those questions
asked only under the one resolver (:meth:`DatasetInfo.spell
<nasmlcn.data.DatasetInfo.spell>`, which ``open_dataset`` and the search's config
share)."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import pytest

from nasmlcn.data import (
    DatasetInfo,
    default_data_dir,
    is_dataset_path,
    open_dataset,
    parse_image_size,
    resolve_data_dir,
)
from tests.conftest import run_cli
from tests.data._images import write_folder

RESOLVERS = (open_dataset.__code__, DatasetInfo.spell.__code__)
"""Where the questions may be asked: the one resolver and the spelling it shares."""

SEARCH = (
    *("search", "--devices", "1xK80", "--mem", "12GB", "--flops", "0.05x", "--trials", "1"),
    *("--epochs", "1", "--batch-size", "8", "--no-prune", "--run-on", "cpu", "--workers", "1"),
    *("--sampler", "random", "--seed", "1", "--study", "once", "-q"),
)


@dataclass
class Call:
    first: Any  # the call's first argument
    under_resolver: bool  # whether open_dataset or DatasetInfo.spell is on the stack


@contextlib.contextmanager
def counted(*functions: Callable[..., Any]) -> Iterator[dict[str, list[Call]]]:
    """The calls of ``functions`` made meanwhile, in any thread, by name."""
    codes = {f.__code__: f.__name__ for f in functions}
    calls: dict[str, list[Call]] = {name: [] for name in codes.values()}

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code not in codes:
            return
        outer: list[CodeType] = []
        back = frame.f_back
        while back is not None:
            outer.append(back.f_code)
            back = back.f_back
        first = (
            frame.f_locals.get(frame.f_code.co_varnames[0]) if frame.f_code.co_argcount else None
        )
        calls[codes[frame.f_code]].append(Call(first, any(c in RESOLVERS for c in outer)))

    before = sys.getprofile()
    sys.setprofile(profile)
    threading.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(before)
        threading.setprofile(None)


def _questions() -> Any:
    return counted(
        open_dataset, is_dataset_path, parse_image_size, resolve_data_dir, default_data_dir
    )


def _asked_once(calls: dict[str, list[Call]], dataset: str, size: str | None) -> None:
    assert len(calls["open_dataset"]) == 1, calls["open_dataset"]
    # the user's value, asked once; a built-in's name spelled already in this process
    # (by an earlier test, or any config's default) is not asked again: 0 or 1
    paths = [c for c in calls["is_dataset_path"] if c.first == dataset]
    assert len(paths) in ({1} if "/" in dataset else {0, 1}), paths
    # a size is parsed once a process: a value parsed by an earlier run is not again
    sizes = [c for c in calls["parse_image_size"] if c.first == size]
    assert len(sizes) in ({0} if size is None else {0, 1}), sizes
    assert len(calls["default_data_dir"]) == 1, calls["default_data_dir"]
    assert len(calls["resolve_data_dir"]) <= 1, calls["resolve_data_dir"]
    for name in ("is_dataset_path", "parse_image_size", "resolve_data_dir", "default_data_dir"):
        strays = [c for c in calls[name] if not c.under_resolver]
        assert not strays, f"{name} asked outside the resolver: {strays}"


@pytest.fixture
def own(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A small folder of a user's images, and a data directory of its own."""
    write_folder(tmp_path / "imgs", classes=3, per_class=8, size=(28, 28))
    (tmp_path / "data").mkdir()
    return tmp_path / "imgs", {"NASMLCN_DATA_DIR": str(tmp_path / "data")}


def test_a_search_on_ones_own_images_resolves_them_once(
    tmp_path: Path, own: tuple[Path, dict[str, str]]
) -> None:
    imgs, env = own
    storage = ("--storage", f"sqlite:///{tmp_path / 's.db'}")
    size = "30x26"  # a size no other test parses: asked once here
    with _questions() as calls:
        result = run_cli(
            *SEARCH, *storage, "--dataset", str(imgs), "--image-size", size, env=env, cwd=tmp_path
        )
    assert result.returncode == 0, result.stderr
    _asked_once(calls, str(imgs), size)


def test_a_proxy_search_on_a_built_in_set_resolves_it_once(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    env = {"NASMLCN_DATA_DIR": str(tmp_path / "data")}
    proxy = ("search", "--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB", "-q")
    with _questions() as calls:
        result = run_cli(
            *proxy, "--trials", "1", "--storage", f"sqlite:///{tmp_path / 'p.db'}",
            env=env, cwd=tmp_path,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    _asked_once(calls, "fashion-mnist", None)


def test_train_on_ones_own_images_resolves_them_once(
    tmp_path: Path, own: tuple[Path, dict[str, str]]
) -> None:
    imgs, env = own
    train = ("train", "--lanes", "mlcn2:1x1", "--epochs", "1", "--batch-size", "8", "-q")
    with _questions() as calls:
        result = run_cli(
            *train, "--dataset", str(imgs), "--out", str(tmp_path / "run"), env=env, cwd=tmp_path
        )
    assert result.returncode == 0, result.stderr
    _asked_once(calls, str(imgs), None)


def test_the_counter_sees_a_question_asked_outside_the_resolver(tmp_path: Path) -> None:
    new = str(tmp_path / "new")  # a value this process has not spelled
    with counted(is_dataset_path, parse_image_size) as calls:
        is_dataset_path("a/b")
        DatasetInfo.spell(new, 1021)
        DatasetInfo.spell(new, "1021x1021")  # spelled already: asked nothing
    assert [(c.first, c.under_resolver) for c in calls["is_dataset_path"]] == [
        ("a/b", False),
        (new, True),
    ]
    assert [(c.first, c.under_resolver) for c in calls["parse_image_size"]] == [(1021, True)]
