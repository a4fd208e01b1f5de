"""Shared fixtures: a private data directory holding real Fashion-MNIST, and a
private PostgreSQL server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests._cli import heap_frozen
from tests._cli import run_cli as run_cli  # the tests import it from here
from tests._cli import run_cli_subprocess as run_cli_subprocess
from tests._postgres import PostgresServer

if TYPE_CHECKING:
    from nasmlcn.search import SearchConfig

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """With pytest-xdist's workers sharing the cores (the default run: 2 workers on
    2 cores), each worker and the processes it starts get an equal share of torch
    threads. Torch's default, a thread per core in every process, oversubscribes them
    and its OpenMP threads spin: two 2-thread trainings side by side took 29 s each
    here, with one thread each 10 s."""
    import os
    import signal

    # A shell without job control starts a background job (``pytest ... &``) with
    # Ctrl-C ignored, and every process a test starts would inherit that: the tests
    # that Ctrl-C a search or the dashboard waited out their timeouts and failed.
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # A calibration of the developer's own (``nasmlcn calibrate``) would change what
    # the searches under test forecast: the tests see none unless they make one.
    if "NASMLCN_CALIBRATION" not in os.environ:
        os.environ["NASMLCN_CALIBRATION"] = str(Path(config.rootpath, "no-calibration.json"))
    # The tests run side by side (two workers, the processes they start, some in
    # sessions of their own): a look at the machine's load would take them for other
    # users' work, lower threads and add warnings to the output under test. The tests
    # of the look itself set it back (tests/hardware/test_load.py).
    os.environ.setdefault("NASMLCN_IGNORE_LOAD", "1")
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers < 2 or "OMP_NUM_THREADS" in os.environ:
        return
    threads = max(1, len(os.sched_getaffinity(0)) // workers)
    os.environ["OMP_NUM_THREADS"] = str(threads)  # the subprocesses the tests start
    import torch

    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _frozen_heap() -> Iterator[None]:
    """Each test starts with the process's heap frozen (:func:`gc.freeze`: pytest,
    the modules imported, the session's fixtures), so the collections inside walk the
    test's own objects only, as in a command's process; the heap thaws after the test.
    Pytest's heap is about 700,000 objects: a search's first collection of it took
    0.4 s, 199 of them 73 s of the default run's CPU. (A search leaves a heap frozen
    by its caller as it is: ``tests/test_heap.py`` thaws it to see what a search does
    to one.)"""
    with heap_frozen(True):
        yield


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with Fashion-MNIST unpacked from Debian's package."""
    from nasmlcn.data import prepare_dataset

    path = tmp_path_factory.mktemp("data")
    prepare_dataset("fashion-mnist", path, download=False)
    return path


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """One private PostgreSQL cluster on 127.0.0.1 for the whole session
    (``tests/_postgres.py``); each test makes its own role and database with
    ``postgres.create_database()``. Fails, not skips, without PostgreSQL's binaries."""
    try:
        server = PostgresServer()
    except RuntimeError as err:
        pytest.fail(str(err), pytrace=False)
    try:
        yield server
    finally:
        server.stop()


def small_search(folder: Path, **options: Any) -> SearchConfig:
    """Runs a real search of small models (``flops 0.05x``: a few seconds a trial on a
    CPU) on 300 synthetic images, 2 epochs of batch 10, into ``folder/s.db``;
    ``options`` add to or replace the settings. The retrain tests build on it.

    Most models learn (validation accuracy well above the 0.19 a trial must beat
    to count as learning); some narrow ones stay at chance, and a study whose
    trials learned nothing has no front to retrain, so a test that needs every
    trial to learn picks a seed where they do (``seed=10`` with two objectives)."""
    from nasmlcn.search import SearchConfig, run_search

    settings: dict[str, Any] = {
        "devices": "1xK80",
        "mem": "12GB",
        "flops": "0.05x",
        "dataset": "synthetic",
        "epochs": 2,
        "batch_size": 10,
        "train_limit": 300,
        "val_limit": 50,
        "sampler": "random",
        "storage": f"sqlite:///{folder / 's.db'}",
        "study": "s",
        "run_on": "cpu",
        "seed": 3,
        "replicate_after": 0,  # a test that measures the noise asks for it
    }
    config = SearchConfig(**{**settings, **options})
    run_search(config)
    return config


def copy_sqlite(source: Path | str, copy: Path) -> Path:
    """``copy``: a copy of the SQLite file ``source`` made through SQLite's backup (a
    test writes into its own copy of a study a module or session made once)."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(source)) as read, closing(sqlite3.connect(copy)) as write:
        read.backup(write)
    return copy


def lr_space(folder: Path) -> Path:
    """``folder/lr-space.toml``: the default space with the learning rate searched from
    1e-9 to 1e-2, so a study holds trials that learn and trials that stay at chance
    (trained at a learning rate near zero)."""
    space = folder / "lr-space.toml"
    text = (ROOT / "search_spaces" / "mlcn-buckets.toml").read_text()
    space.write_text(text + "\n[training]\nlr = [1e-9, 1e-2]\n")
    return space


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``gpu`` tests need CUDA: they are skipped, with the reason, where none is present."""
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
