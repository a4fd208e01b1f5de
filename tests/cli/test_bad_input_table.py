"""Bad input for every command, in one table.

Each row runs one command against one kind of bad input: a missing, truncated or
foreign checkpoint; an ``arch.json`` of another model; a folder that mixes two
exports; a file in the wrong format; an out-of-range number; an output that cannot
be written; a storage that cannot be written. Every row must end in exactly one
line on stderr, starting ``error:``, exit code 2, no traceback, and every file
under the test's folder (the run folders, the studies and their artifacts, the
working directory) byte-for-byte as it was, with nothing added.

The inputs are made once for the module by the real commands: one tiny
``train --out`` run on synthetic data, one proxy study, and one tiny study of
the train evaluator whose trial keeps its weights (for ``best --export`` and
``retrain``).
"""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import torch

from nasmlcn.specs import MLCNSpec, load_arch, save_arch
from tests.conftest import run_cli

LANES = "mlcn1:1x1,mlcn2:1x1"
TINY_TRAIN = (
    *("--dataset", "synthetic", "--epochs", "1", "--train-limit", "40"),
    *("--val-limit", "20", "--test-limit", "20", "--batch-size", "20", "-q"),
)
PROXY = ("--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB", "--epochs", "2")
SEARCH = ("search", *PROXY, "--study", "p", "--trials", "5", "-q")
RESUME = ("train", "--lanes", LANES, *TINY_TRAIN, "--resume")

CHECKPOINT = "missing, truncated or foreign checkpoint"
ARCH = "arch.json of another model"
MIXED = "folder mixing two exports"
FORMAT = "wrong-format file"
RANGE = "out-of-range number"
OUTPUT = "unwritable output"
STORAGE = "storage that cannot be written"


@dataclass(frozen=True)
class Inputs:
    """The module's inputs; ``fields`` fill the ``{name}`` slots of a row."""

    root: Path
    fields: dict[str, str]


def _ok(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, (result.stdout, result.stderr)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Inputs:
    root = tmp_path_factory.mktemp("bad-input")
    (root / "cwd").mkdir()  # the commands' working directory: nothing may appear there
    run = root / "run"
    _ok(run_cli("train", "--lanes", LANES, *TINY_TRAIN, "--out", str(run)))
    for folder in ("proxy", "trained"):  # a storage's folder must exist
        (root / folder).mkdir()
    proxy = f"sqlite:///{root / 'proxy' / 's.db'}"
    _ok(run_cli(*SEARCH[:-3], "--trials", "3", "--storage", proxy, "-q"))
    trained = f"sqlite:///{root / 'trained' / 's.db'}"  # artifacts/ beside it
    _ok(
        run_cli(
            *("search", "--dataset", "synthetic", "--flops", "0.05x", "--devices", "1xK80"),
            *("--mem", "12GB", "--trials", "1", "--epochs", "1", "--train-limit", "40"),
            *("--val-limit", "20", "--batch-size", "20", "--run-on", "cpu", "--no-prune"),
            # seed 2: its one trial learns (best --export needs a feasible trial)
            *("--storage", trained, "--study", "t", "-q", "--seed", "2"),
        )
    )
    export = root / "export"
    _ok(run_cli("best", "--storage", trained, "--export", str(export)))

    def copy(source: Path, name: str) -> Path:
        target = root / name
        shutil.copytree(source, target)
        return target

    checkpoint = "checkpoint.pt"
    truncated = copy(run, "truncated")
    body = (run / checkpoint).read_bytes()
    (truncated / checkpoint).write_bytes(body[: len(body) // 2])
    foreign = copy(run, "foreign")  # a torch file of tensors, not nasmlcn's
    torch.save({"weight": torch.zeros(3)}, foreign / checkpoint)
    no_checkpoint = copy(run, "no-checkpoint")
    (no_checkpoint / checkpoint).unlink()
    # the arch.json train --out writes for another model (mlcn1:2x1)
    trained_arch = load_arch(run / "arch.json")
    assert isinstance(trained_arch, MLCNSpec)
    other = replace(trained_arch, lanes=MLCNSpec.from_lanes("mlcn1:2x1").lanes)
    other_arch = copy(run, "other-arch")
    save_arch(other, other_arch / "arch.json")
    # best --export's files with the result.json of the train run beside them
    mixed = copy(export, "mixed")
    shutil.copy(run / "result.json", mixed / "result.json")
    bad_result = copy(run, "bad-result")
    (bad_result / "result.json").write_text('{"dataset": "synthetic",')
    # retrain --resume folders: trial 0's run folder, damaged two ways
    retrain_truncated = root / "retrain-truncated" / "trial-0000"
    shutil.copytree(export, retrain_truncated)
    (retrain_truncated / checkpoint).write_bytes((export / checkpoint).read_bytes()[:1000])
    retrain_other = root / "retrain-other" / "trial-0000"
    shutil.copytree(export, retrain_other)
    save_arch(other, retrain_other / "arch.json")
    a_file = root / "a-file"
    a_file.write_text("not a folder\n")
    not_json = root / "not-json.json"
    not_json.write_text("lanes: mlcn1:1x1\n")
    bad_toml = root / "space.toml"
    bad_toml.write_text('kind = "buckets"\nwidth = [1,\n')
    binary = root / "recipe.toml"
    binary.write_bytes(bytes(range(256)))
    text_db = root / "notes.db"
    text_db.write_text("these are notes, not a database\n")
    for db in (root / "proxy" / "s.db", root / "trained" / "s.db"):
        connection = sqlite3.connect(db)
        try:  # fold the WAL into the file
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
    fields = {
        "run": str(run),
        "export": str(export),
        "truncated": str(truncated),
        "foreign": str(foreign),
        "no_checkpoint": str(no_checkpoint),
        "other_arch": str(other_arch),
        "mixed": str(mixed),
        "bad_result": str(bad_result),
        "retrain_truncated": str(retrain_truncated.parent),
        "retrain_other": str(retrain_other.parent),
        "file": str(a_file),
        "not_json": str(not_json),
        "bad_toml": str(bad_toml),
        "binary": str(binary),
        "text_db": f"sqlite:///{text_db}",
        "proxy": proxy,
        "proxy_ro": f"sqlite:///file:{root / 'proxy' / 's.db'}?mode=ro&uri=true",
        "trained": trained,
        "trained_ro": f"sqlite:///file:{root / 'trained' / 's.db'}?mode=ro&uri=true",
        "cwd": str(root / "cwd"),
    }
    return Inputs(root, fields)


@dataclass(frozen=True)
class Case:
    command: str
    kind: str
    args: tuple[str, ...]
    expected: str

    @property
    def id(self) -> str:
        return f"{self.command}: {self.kind}: {self.expected[:40]}"


CASES = [
    # search, one process
    Case("search", STORAGE, (*SEARCH, "--storage", "{proxy_ro}"), "is opened read-only (mode=ro)"),
    Case(
        "search",
        RANGE,
        (*SEARCH, "--storage", "{proxy}", "--trials", "100000000000"),
        "trials must be at most 1,000,000",
    ),
    Case(
        "search",
        FORMAT,
        (*SEARCH, "--storage", "{proxy}", "--space", "{bad_toml}"),
        "is not valid TOML",
    ),
    Case(
        "search",
        RANGE,
        (
            *SEARCH,
            "--storage",
            "{proxy}",
            "--study",
            "q",
            "--space",
            "mlcn-thesis",
            "--devices",
            "1xK80",
            "--mem",
            "0.05GB",
        ),
        "no lane of space 'mlcn-thesis' fits any device (the smallest, mlcn2:1x1, needs",
    ),
    Case(
        "search",
        OUTPUT,
        (*SEARCH, "--storage", "sqlite:///{file}/s.db"),
        "is a file, not a folder; choose another --storage",
    ),
    # search --workers
    Case(
        "search --workers",
        STORAGE,
        (*SEARCH, "--workers", "2", "--storage", "{proxy_ro}"),
        "is opened read-only (mode=ro)",
    ),
    Case(
        "search --workers",
        RANGE,
        (*SEARCH, "--workers", "2", "--storage", "{proxy}", "--epochs", "1000000"),
        "epochs must be at most 100,000",
    ),
    Case(
        "search --workers",
        FORMAT,
        (*SEARCH, "--workers", "2", "--storage", "{proxy}", "--config", "{binary}"),
        "is not UTF-8 text",
    ),
    # best --export
    Case(
        "best --export",
        MIXED,
        ("best", "--storage", "{trained}", "--export", "{run}"),
        "already holds a model (checkpoint.pt, arch.json, result.json)",
    ),
    Case(
        "best --export",
        OUTPUT,
        ("best", "--storage", "{trained}", "--export", "{file}"),
        "is a file, not a folder; choose another --export",
    ),
    Case(
        "best --export-arch",
        MIXED,
        ("best", "--storage", "{trained}", "--export-arch", "{run}/arch.json"),
        "would replace a file of the run in",
    ),
    Case(
        "best --export-arch",
        OUTPUT,
        ("best", "--storage", "{trained}", "--export-arch", "{run}"),
        "is a folder; give the JSON file to write",
    ),
    Case(
        "best --export",
        RANGE,
        ("best", "--storage", "{trained}", "--export", "{cwd}/x", "--trial", "99"),
        "--trial 99: study 't' has trials 0-0",
    ),
    Case(
        "best --export",
        FORMAT,
        ("best", "--storage", "{text_db}", "--export", "{cwd}/x"),
        "an SQLite database?",
    ),
    # retrain
    Case(
        "retrain",
        STORAGE,
        ("retrain", "--storage", "{trained_ro}", "--top", "1", "--out", "{cwd}/rt"),
        "is opened read-only (mode=ro)",
    ),
    Case(
        "retrain",
        RANGE,
        ("retrain", "--storage", "{trained}", "--top", "1", "--epochs", "1000000000"),
        "epochs must be at most 100,000",
    ),
    Case(
        "retrain",
        OUTPUT,
        ("retrain", "--storage", "{trained}", "--top", "1", "--out", "{file}"),
        "is inside the file",
    ),
    Case(
        "retrain",
        CHECKPOINT,
        ("retrain", "--storage", "{trained}", "--top", "1", "--resume"),
        "is truncated or damaged",
    ),
    Case(
        "retrain",
        ARCH,
        ("retrain", "--storage", "{trained}", "--top", "1", "--resume"),
        "mixes two models: arch.json describes mlcn1:2x1",
    ),
    # evaluate
    Case(
        "evaluate", CHECKPOINT, ("evaluate", "--run", "{no_checkpoint}"), "holds no checkpoint.pt"
    ),
    Case("evaluate", CHECKPOINT, ("evaluate", "--run", "{truncated}"), "is truncated or damaged"),
    Case("evaluate", ARCH, ("evaluate", "--run", "{other_arch}"), "arch.json describes mlcn1:2x1"),
    Case("evaluate", MIXED, ("evaluate", "--run", "{mixed}"), "mixes two models: result.json"),
    Case("evaluate", FORMAT, ("evaluate", "--run", "{bad_result}"), "is not valid JSON"),
    Case(
        "evaluate",
        RANGE,
        ("evaluate", "--run", "{run}", "--inference-batch", "0"),
        "Invalid value for '--inference-batch'",
    ),
    # remove-lanes
    Case(
        "remove-lanes",
        OUTPUT,
        ("remove-lanes", "--run", "{run}", "--out", "{file}"),
        "is a file, not a folder; choose another --out",
    ),
    Case(
        "remove-lanes",
        OUTPUT,
        ("remove-lanes", "--run", "{run}", "--keep", "1", "--out", "{export}"),
        "already holds a model (checkpoint.pt, arch.json)",
    ),
    Case(
        "remove-lanes",
        RANGE,
        ("remove-lanes", "--run", "{run}", "--keep", "9"),
        "--keep 9: the run has 2",
    ),
    # export-model
    Case(
        "export-model",
        CHECKPOINT,
        ("export-model", "--run", "{foreign}"),
        "is not a nasmlcn checkpoint",
    ),
    Case(
        "export-model",
        OUTPUT,
        ("export-model", "--run", "{run}", "--out", "{file}/model.pt"),
        "'{file}' is a file, not a folder",
    ),
    Case(
        "export-model",
        OUTPUT,
        ("export-model", "--run", "{run}", "--out", "{run}/checkpoint.pt"),
        "is a run's checkpoint.pt, which the export would overwrite",
    ),
    Case(
        "best --export",
        RANGE,
        ("best", "--storage", "{trained}", "--trial", "0"),  # --trial without --export
        "--trial 0 picks the trial --export writes; give --export DIR",
    ),
    # plan, correlate
    Case(
        "plan",
        RANGE,
        (
            "plan",
            "--devices",
            "2xK80",
            "--lanes",
            LANES,
            "--strategy",
            "optimal",
            "--time-limit",
            "0",
        ),
        "--time-limit must be more than 0 seconds, got 0.0",
    ),
    Case(
        "correlate",
        RANGE,
        ("correlate", "--storage", "{proxy}", "--threshold", "2"),
        "--threshold must be a number in [-1, 1], got 2.0",
    ),
    # estimate
    Case("estimate", FORMAT, ("estimate", "--arch", "{not_json}"), "not valid JSON"),
    Case("estimate", RANGE, ("estimate", "--lanes", "mlcn1:0x1"), "lane width must be"),
    Case(
        "estimate",
        RANGE,
        ("estimate", "--lanes", "mlcn2:1x99999999999"),
        "lane depth must be 1..1024, got 99999999999",
    ),
    # calibrate
    Case(
        "calibrate",
        OUTPUT,
        ("calibrate", "--quick", "--out", "{file}/c.toml"),
        "is inside the file",
    ),
    # dashboard
    Case(
        "dashboard",
        STORAGE,
        ("dashboard", "--refresh", "--storage", "{proxy_ro}"),
        "is opened read-only (mode=ro)",
    ),
    Case(
        "dashboard",
        RANGE,
        ("dashboard", "--storage", "{proxy}", "--port", "70000"),
        "Invalid value for '--port'",
    ),
    Case("dashboard", FORMAT, ("dashboard", "--storage", "{text_db}"), "an SQLite database?"),
    Case(
        "dashboard",
        FORMAT,
        ("dashboard", "--storage", "{proxy}", "--host", ""),
        "--host '': give an address",
    ),
    Case(
        "dashboard",
        FORMAT,
        ("dashboard", "--storage", "{proxy}", "--artifacts", "{file}"),
        "is not a folder; give the search's",
    ),
    # train --resume
    Case("train --resume", CHECKPOINT, (*RESUME, "--out", "{truncated}"), "is truncated"),
    Case("train --resume", ARCH, (*RESUME, "--out", "{other_arch}"), "arch.json describes"),
    Case(
        "train --resume",
        MIXED,
        ("train", "--arch", "{mixed}/arch.json", *TINY_TRAIN, "--out", "{mixed}", "--resume"),
        "mixes two models: result.json reports run",
    ),
    Case(
        "train --resume",
        RANGE,
        (*RESUME, "--out", "{run}", "--epochs", "1000000000"),
        "epochs must be at most 100,000",
    ),
    Case(
        "train --resume",
        FORMAT,
        ("train", "--arch", "{not_json}", *TINY_TRAIN, "--out", "{run}", "--resume"),
        "not valid JSON",
    ),
    Case(
        "train --resume",
        OUTPUT,
        (*RESUME, "--out", "{file}/run"),
        "--resume: no checkpoint.pt in",
    ),
    Case(
        "train --resume",
        MIXED,
        (*RESUME, "--out", "{run}", "--seed", "5"),
        "was trained with --seed 0, not with --seed 5; resume with --seed 0",
    ),
]

_RETRAIN_FOLDERS = {CHECKPOINT: "retrain_truncated", ARCH: "retrain_other"}


def _snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its content hash. SQLite's shared-memory index
    (``-shm``) and an empty write-ahead log are reader side files, not writes."""
    files = {}
    for path in sorted(root.rglob("*")):
        if path.is_dir() or path.name.endswith("-shm"):
            continue
        if path.name.endswith("-wal") and path.stat().st_size == 0:
            continue
        files[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def _args(case: Case, inputs: Inputs) -> list[str]:
    fields = inputs.fields
    args = [a.format(**fields) for a in case.args]
    if case.command == "retrain" and case.kind in _RETRAIN_FOLDERS:
        args += ["--out", fields[_RETRAIN_FOLDERS[case.kind]]]
    return args


def test_every_command_and_every_kind_has_a_row() -> None:
    commands = {
        "search",
        "search --workers",
        "best --export",
        "best --export-arch",
        "retrain",
        "evaluate",
        "remove-lanes",
        "export-model",
        "estimate",
        "plan",
        "correlate",
        "calibrate",
        "dashboard",
        "train --resume",
    }
    assert {c.command for c in CASES} == commands
    assert {c.kind for c in CASES} == {CHECKPOINT, ARCH, MIXED, FORMAT, RANGE, OUTPUT, STORAGE}


_LAST_SNAPSHOT: dict[Path, dict[str, str]] = {}
"""The files after the last row, which are the next row's files before it (hashed
once per row, not twice)."""


@pytest.fixture
def unchanged(inputs: Inputs) -> Iterator[None]:
    before = _LAST_SNAPSHOT.get(inputs.root) or _snapshot(inputs.root)
    yield
    after = _LAST_SNAPSHOT[inputs.root] = _snapshot(inputs.root)
    assert sorted(set(after) - set(before)) == [], "files were added"
    assert sorted(set(before) - set(after)) == [], "files were removed"
    changed = [name for name in before if before[name] != after[name]]
    assert changed == [], "files were changed"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@pytest.mark.usefixtures("unchanged")
def test_bad_input_is_refused_in_one_line_and_changes_nothing(inputs: Inputs, case: Case) -> None:
    result = run_cli(*_args(case, inputs), cwd=inputs.root / "cwd", timeout=120)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert case.expected.format(**inputs.fields) in lines[0], lines[0]
