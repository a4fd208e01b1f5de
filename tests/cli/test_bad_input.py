"""Every bad input is refused before anything is written: one line naming the bad
value, exit code 2, no traceback, and every file as it was."""

from __future__ import annotations

import pickle
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import run_cli

TINY = ("--dataset", "synthetic", "--epochs", "1", "--train-limit", "20", "--val-limit", "20")


def _refused(result: subprocess.CompletedProcess[str], expected: str) -> str:
    """The one error line of a refused command (asserting exit 2 and no traceback)."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert expected in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("lanes", "expected"),
    [
        ("", "no lanes given ('')"),
        (" ", "no lanes given (' ')"),
        (",", "lane 1 of ',' is empty"),
        ("mlcn1:1x1,,mlcn2:1x1", "lane 2 of 'mlcn1:1x1,,mlcn2:1x1' is empty"),
    ],
)
def test_train_refuses_an_empty_lane_list(tmp_path: Path, lanes: str, expected: str) -> None:
    out = tmp_path / "out"
    result = run_cli("train", "--lanes", lanes, *TINY, "--out", str(out), "-q")
    _refused(result, expected)
    assert not out.exists()


def test_train_refuses_a_lane_too_large_for_this_machine_before_allocating(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    result = run_cli("train", "--lanes", "mlcn1:2x1,mlcn1:1024x1", *TINY, "--out", str(out))
    line = _refused(result, "lane 2 (mlcn1:1024x1) needs about ")
    # the machine the test runs on: cpu here, cuda:0 on a GPU machine
    assert re.search(r"\d GiB to train at batch 20; this machine \((cpu|cuda:\d+)\) has ", line)
    assert "available" in line
    assert not out.exists()


def test_resume_with_other_lanes_leaves_the_folder_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out"
    common = ("train", *TINY, "--test-limit", "20", "--out", str(out), "-q")
    assert run_cli(*common, "--lanes", "mlcn1:1x1").returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    refused = run_cli(*common, "--lanes", "mlcn1:2x1", "--epochs", "2", "--resume")
    _refused(refused, "is for mlcn1:1x1, not mlcn1:2x1")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # arch.json included


class _Payload:
    """Unpickling this with plain pickle would create ``marker`` (a stand-in for any
    code a malicious checkpoint runs)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (open, (str(self.marker), "w"))


def test_a_malicious_checkpoint_is_refused_in_one_line_and_never_runs(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    marker = tmp_path / "marker"
    (out / "checkpoint.pt").write_bytes(pickle.dumps({"model": _Payload(marker)}))
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = run_cli("train", "--lanes", "mlcn1:1x1", *TINY, "--out", str(out), "--resume")
    line = _refused(result, "is not a nasmlcn checkpoint")
    assert "was not loaded" in line
    assert "weights_only" not in line
    assert not marker.exists()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # no arch.json written


def _studies(db: Path) -> list[str]:
    with sqlite3.connect(db) as con:
        return [row[0] for row in con.execute("SELECT study_name FROM studies")]


def _search(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(
        "search",
        "--devices",
        "2xK80",
        "--mem",
        "12GB",
        "--epochs",
        "1",
        "--storage",
        f"sqlite:///{db}",
        "-q",
        *args,
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--data-dir", "/no/such/dir"), "data directory '/no/such/dir' does not exist"),
        (("--run-on", "bogus"), "--run-on 'bogus': unknown device 'bogus'"),
        (("--run-on", "cuda:99"), "--run-on 'cuda:99': device 'cuda:99'"),
        (("--evaluator", "proxy", "--data-dir", "/no/such/dir"), "'/no/such/dir' does not exist"),
    ],
)
def test_search_refuses_bad_data_and_devices_before_a_study_exists(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    db = tmp_path / "s.db"
    _refused(_search(db, "--dataset", "synthetic", "--trials", "2", *args), expected)
    assert not db.exists()


def test_an_edited_space_file_is_refused_for_its_study(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    space = tmp_path / "space.toml"
    original = (Path(__file__).parents[2] / "search_spaces" / "mlcn-homogeneous.toml").read_text()
    space.write_text(original)
    common = ("--evaluator", "proxy", "--space", str(space), "--study", "x")
    assert _search(db, *common, "--trials", "2").returncode == 0

    def states() -> list[str]:
        with sqlite3.connect(db) as con:
            return [row[0] for row in con.execute("SELECT state FROM trials ORDER BY number")]

    assert states() == ["COMPLETE", "COMPLETE"]
    # a changed range would mix two spaces in one study
    space.write_text(original.replace("width = [1, 5]", "width = [1, 8]"))
    line = _refused(
        _search(db, *common, "--trials", "4"), "another search space: width max 5 (now 8)"
    )
    assert str(space) in line
    # a changed choice made Optuna raise mid-sampling and left a RUNNING trial
    space.write_text(original.replace('lane_types = ["mlcn1", "mlcn2"]', 'lane_types = ["mlcn1"]'))
    _refused(_search(db, *common, "--trials", "4"), "lane_types ['mlcn1', 'mlcn2'] (now ['mlcn1'])")
    assert states() == ["COMPLETE", "COMPLETE"]
    # the file as it was continues the study
    space.write_text(original)
    assert _search(db, *common, "--trials", "3").returncode == 0
    assert states() == ["COMPLETE"] * 3
    assert _studies(db) == ["x"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("search", "--objectives", ""), "objectives: give at least one"),
        (("search", "--objectives", "accuracy,"), "objectives: an empty name in 'accuracy,'"),
        (("search", "--study", ""), "study name '' is empty"),
        (("search", "--mem", "1KB"), "the smallest lane (mlcn2:1x1) needs about 21.1 MiB"),
        (("search", "--mem", "12"), "--mem 12: give a unit, e.g. 12GB or 12GiB"),
        (("search", "--batch-size", "100000000"), "to train at batch 100000000"),
        (("train", "--lanes", "mlcn1:1x1", "--out", "{file}/run"), "is inside the file"),
        (("train", "--lanes", "2*mlcn1:1x1", "--placement", "bogus"), "unknown placement strategy"),
    ],
)
def test_other_bad_values_write_nothing(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    file = tmp_path / "a-file"
    file.write_text("x")
    args = tuple(a.format(file=file) for a in args)
    db = tmp_path / "s.db"
    extra = (
        ("--evaluator", "proxy", "--storage", f"sqlite:///{db}", "--trials", "1")
        if args[0] == "search"
        else TINY
    )
    _refused(run_cli(*args, *extra, cwd=tmp_path), expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_a_bad_sweep_value_is_refused_before_the_first_study(tmp_path: Path) -> None:
    recipe = tmp_path / "sweep.toml"
    recipe.write_text(
        'devices = "2xK80"\nevaluator = "proxy"\ntrials = 1\nepochs = 1\nstudy = "sw"\n'
        '[sweep]\nflops = ["1x", "bogus"]\n'
    )
    db = tmp_path / "s.db"
    result = run_cli("search", "--config", str(recipe), "--storage", f"sqlite:///{db}", "-q")
    _refused(result, "invalid --flops 'bogus'")
    assert not db.exists()


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (("--pruner", "nope"), "unknown pruner 'nope'; choose one of: correlation, halving"),
        (("--halving-rate", "1"), "--halving-rate must be an integer >= 2, got 1"),
        (("--warm-start-top", "0"), "--warm-start-top must be an integer >= 1, got 0"),
        (("--warm-start", "gone"), "--warm-start 'gone': "),
        (
            ("--pruner", "halving", "--no-prune"),
            "--pruner halving stops trials at its rungs, but --prune is off",
        ),
        (("--pruner", "halving", "--epochs", "1"), "--pruner halving needs --epochs >= 2"),
        (
            ("--warm-start", "o1"),
            "(looked in this search's --storage; give --warm-start-storage URL where the "
            "earlier study is)",
        ),
        (
            ("--halving-rate", "2"),
            "--halving-rate 2 sets the rungs of --pruner halving, but the pruner is "
            "'correlation'; add --pruner halving or drop --halving-rate",
        ),
    ],
    ids=[
        "pruner",
        "halving-rate",
        "warm-start-top",
        "warm-start",
        "halving-without-pruning",
        "halving-at-one-epoch",
        "warm-start-elsewhere",
        "halving-rate-without-halving",
    ],
)
def test_search_refuses_bad_multi_fidelity_and_warm_start_options(
    tmp_path: Path, option: tuple[str, ...], expected: str
) -> None:
    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    result = run_cli(
        "search", "--evaluator", "proxy", "--devices", "2xK80", "--trials", "2",
        "--storage", url, *option,
    )  # fmt: skip
    _refused(result, expected)
    assert not db.exists()  # refused before the storage was made


@pytest.mark.parametrize(
    "args",
    [
        ("export", "--out", ""),
        ("train", "--out", " "),
        ("search", "--artifacts", ""),
        ("search", "--device-file", ""),
        ("best", "--export", ""),
        ("data", "prepare", "--data-dir", ""),
        ("reproduce", "thesis-table4.1", "--out", ""),
    ],
    ids=lambda a: "-".join(a[:2]),
)
def test_an_empty_path_is_refused_not_read_as_the_current_folder(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    # Path("") is ".": export --out '' used to write its report into the current folder
    line = _refused(run_cli(*args, cwd=tmp_path), "is an empty path; give a file or folder")
    assert "--" in line
    assert list(tmp_path.iterdir()) == []


def test_a_recipe_s_empty_path_is_refused(tmp_path: Path) -> None:
    recipe = tmp_path / "r.toml"
    recipe.write_text('artifacts = ""\nevaluator = "proxy"\ntrials = 1\n')
    db = tmp_path / "s.db"
    _refused(
        run_cli("search", "--config", str(recipe), "--storage", f"sqlite:///{db}", cwd=tmp_path),
        "--artifacts '' is an empty path",
    )
    assert not db.exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ("export", "--scale", "nan"),
            "'--scale': Input should be less than or equal to 8, got 'nan'",
        ),
        (("export", "--scale", "0"), "greater than or equal to 0.25, got '0'"),
        (
            ("dashboard", "--port", "-1"),
            "'--port': Input should be greater than or equal to 0, got '-1'",
        ),
    ],
)
def test_a_range_error_names_the_value_given(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    _refused(run_cli(*args, cwd=tmp_path), expected)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["export", "best", "dashboard", "search"])
def test_an_empty_storage_is_refused_not_read_as_the_default(tmp_path: Path, command: str) -> None:
    _refused(run_cli(command, "--storage", "", cwd=tmp_path), "--storage '' is empty; give a URL")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        # a bare number is a multiple in TOML but absolute FLOPs on the command line
        ("flops = 0.5", "--flops must be text (e.g. '1x'), got 0.5"),
        ("space = 5", "--space must be text (e.g. 'mlcn-buckets'), got 5"),
        ("study = 5", "--study must be text, got 5"),
        ("keep_weights = 5", "--keep-weights must be text (e.g. 'best:5'), got 5"),
    ],
)
def test_a_recipe_s_text_option_must_be_text(tmp_path: Path, line: str, expected: str) -> None:
    recipe = tmp_path / "r.toml"
    recipe.write_text(f'devices = "2xK80"\nevaluator = "proxy"\ntrials = 1\n{line}\n')
    db = tmp_path / "s.db"
    _refused(run_cli("search", "--config", str(recipe), "--storage", f"sqlite:///{db}"), expected)
    assert not db.exists()


@pytest.mark.parametrize(
    "args",
    [
        ("search", "--evaluator", "proxy", "--seed", "4294967296"),
        ("train", "--seed", "99999999999999999999"),
        ("plan", "--devices", "2xK80", "--lanes", "mlcn1:1x1", "--seed", "4294967296"),
        ("retrain", "--seed", "4294967296"),
        ("calibrate", "--seed", "4294967296"),
    ],
    ids=lambda a: a[0],
)
def test_every_command_takes_seeds_up_to_2_to_the_32_minus_1(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    line = _refused(run_cli(*args, cwd=tmp_path), "--seed")
    assert "4294967295" in line.replace(",", "")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("train", "--resume"), "--resume continues the run in --out; give --out RUN"),
        (
            ("train", "--resume", "--out", "typo"),
            "--resume: no checkpoint.pt in 'typo' to continue",
        ),
        (("retrain", "--resume"), "there is no --out; give the --out of the retrain"),
        (("retrain", "--resume", "--out", "typo"), "there is no folder 'typo'"),
    ],
)
def test_a_resume_with_nothing_to_continue_is_refused_not_started_afresh(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    extra = TINY if args[0] == "train" else ()
    _refused(run_cli(*args, *extra, cwd=tmp_path), expected)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("99", "schema_version 99 is newer than this nasmlcn reads (1); upgrade nasmlcn"),
        ('"x"', "schema_version must be an integer >= 1, got 'x'"),
    ],
)
def test_a_recipe_for_a_newer_nasmlcn_is_refused(
    tmp_path: Path, version: str, expected: str
) -> None:
    recipe = tmp_path / "r.toml"
    recipe.write_text(f'devices = "2xK80"\nevaluator = "proxy"\nschema_version = {version}\n')
    db = tmp_path / "s.db"
    _refused(run_cli("search", "--config", str(recipe), "--storage", f"sqlite:///{db}"), expected)
    assert not db.exists()


def test_a_reproduction_table_without_its_engine_is_named_so(tmp_path: Path) -> None:
    recipe = tmp_path / "rr.toml"
    recipe.write_text('devices = "2xK80"\n[reproduce]\npaper = "thesis"\n')
    line = _refused(
        run_cli("search", "--config", str(recipe), cwd=tmp_path), "that names no engine"
    )
    assert "None.py" not in line
    assert list(tmp_path.iterdir()) == [recipe]
