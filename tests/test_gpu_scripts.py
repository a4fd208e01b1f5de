"""The GPU scripts hold together on a machine without a GPU: ``scripts/gpu_prepare.sh``
and ``scripts/gpu_check.sh`` parse, every flag gpu_check.sh passes to a benchmark or
a ``nasmlcn`` command is one that command's ``--help`` lists (the device machine is
lent for minutes: a typo there costs a whole call), ``--part speed`` runs its steps
(the main job with 1, 2, 4 and 8 workers a GPU among them) within 8 minutes, and
``benchmarks/fused_lanes.py``'s ``--compile`` path runs, or is skipped with its
reason, on a CPU."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks._scripts import load_script, run_json
from tests.conftest import ROOT, run_cli

SCRIPTS = ROOT / "scripts"
CHECK = SCRIPTS / "gpu_check.sh"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
# a script of benchmarks/ or an engine of nasmlcn reproduce, by its name
BENCHMARK = re.compile(r"(?:benchmarks/|-m nasmlcn\.reproduce\.engines\.)(\w+)(?:\.py)?(.*)")
COMMAND = re.compile(r"-m nasmlcn (\w+)(.*)")


def _invocations(pattern: re.Pattern[str]) -> dict[str, set[str]]:
    """What each command gpu_check.sh runs (its name -> the flags it passes), from the
    lines that invoke it (the script keeps each command on one line)."""
    found: dict[str, set[str]] = {}
    for line in CHECK.read_text().splitlines():
        code = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        for name, rest in pattern.findall(code):
            found.setdefault(name, set()).update(FLAG.findall(rest))
    return found


@pytest.mark.parametrize("script", ["gpu_prepare.sh", "gpu_check.sh"])
def test_the_scripts_parse(script: str) -> None:
    result = subprocess.run(
        ["bash", "-n", str(SCRIPTS / script)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def test_gpu_check_refuses_an_unknown_part_before_doing_anything(tmp_path: Path) -> None:
    result = subprocess.run(
        ["bash", str(CHECK), "--part", "3"],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out")},
    )
    assert result.returncode == 2
    assert "--part speed, 1, 2, reproduce, accuracy or all, not 3" in result.stderr
    assert not (tmp_path / "out").exists()


def test_gpu_check_help_names_the_speed_part_first() -> None:
    result = subprocess.run(
        ["bash", str(CHECK), "--help"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0
    assert "--part speed|1|2|reproduce|accuracy|all" in result.stdout
    runs = [line for line in result.stdout.splitlines() if "bash scripts/gpu_check.sh" in line]
    assert "--part speed" in runs[0]
    assert "run this first" in runs[0]


def test_part_speed_is_accepted_and_fits_eight_minutes(tmp_path: Path) -> None:
    # a spent budget skips every step: the part's steps, in order, in a second
    skipped = _spent_budget_run(tmp_path / "out", "--part", "speed", "--device", "cuda:0")
    assert [line.split()[:2] for line in skipped if line] == [
        [step, "skip"]
        for step in (
            "setup",
            "environment",
            "gpu_speed",
            "speed-w1",
            "speed-w2",
            "speed-w4",
            "speed-w8",
            "speed-summary",
        )
    ]
    # the limits of the part's steps, setup and environment included, fit 480 s
    text = CHECK.read_text()
    body = text[text.index("speed_part() {") :]
    body = body[: body.index("\n}\n")]
    limits = dict(re.findall(r"^\s*step ([\w-]+) \w+ (\d+) ", body, re.M))
    assert len(limits) == 6
    assert re.search(r"\$PART == speed[^\n]*\]\] && SETUP_LIMIT=60 ENV_LIMIT=40", text)
    assert 60 + 40 + sum(int(n) for n in limits.values()) <= 480
    assert re.search(r"\[\[ \$PART == speed \]\] && BUDGET=480", text)


def test_part_speed_packs_the_main_job_one_two_four_and_eight_workers_a_gpu() -> None:
    text = CHECK.read_text()
    body = text[text.index("speed_part() {") :]
    body = body[: body.index("\n}\n")]
    found = re.findall(r"^\s*step (speed-w\d+) json (\d+) (.*)$", body, re.M)
    jobs = {name: (int(limit), command) for name, limit, command in found}
    assert sorted(jobs) == ["speed-w1", "speed-w2", "speed-w4", "speed-w8"]
    # K = 1 is trial_time.py's run (its phases), its study kept where the summary reads it
    assert "benchmarks/trial_time.py --runs 1 " in jobs["speed-w1"][1]
    timeouts = [int(n) for n in re.findall(r"SPEED_TIMEOUT=(\d+)", text)]
    assert len(timeouts) == 2  # --quick's and the full run's
    for name, (limit, command) in jobs.items():
        k = name.removeprefix("speed-w")
        assert f'--storage "sqlite:///$OUT/{name}.db"' in command
        assert '--trials "$SPEED_TRIALS"' in command
        assert "--train-limit 10000 --val-limit 2000" in command
        if k == "1":
            assert "--workers-per-gpu" not in command
        else:
            assert f"--workers-per-gpu {k} " in command
        # --timeout ends each job with time left to close its database
        assert '--timeout "$SPEED_TIMEOUT"' in command
        assert max(timeouts) + 15 <= limit
    assert re.search(r"SPEED_TRIALS=16 SPEED_TIMEOUT=\d+$", text, re.M)
    summary = re.search(r"step speed-summary txt \d+ (.*)$", body, re.M)
    assert summary is not None
    assert all(f'"$OUT/{name}.db"' in summary[1] for name in jobs)
    # the speed goals are at batch 100 (docs/hardware.md): the speed step measures there
    assert re.search(r"step gpu_speed json \d+ .*--batch 100 ", body)


def test_part_accuracy_runs_a_seed_a_step_within_nine_minutes(tmp_path: Path) -> None:
    out = tmp_path / "out"
    earlier = tmp_path / "earlier.json"
    earlier.write_text('{"kind": "thesis-table"}')
    args = ["--part", "accuracy", "--budget", "1", "--seeds", "1 2", "--results-from", str(earlier)]
    result = subprocess.run(
        ["bash", str(CHECK), *args],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "OUT": str(out)},
    )
    assert result.returncode == 0, result.stderr
    skipped = (out / "summary.txt").read_text().split("\n")[1:]
    assert [line.split()[:2] for line in skipped if line] == [
        [step, "skip"] for step in ("setup", "environment", "accuracy_seed1", "accuracy_seed2")
    ]
    # the earlier call's results are where the table script reads and extends them
    assert (out / "accuracy" / "results.json").read_text() == earlier.read_text()
    text = CHECK.read_text()
    body = text[text.index("accuracy_part() {") :]
    body = body[: body.index("\n}\n")]
    (limit,) = re.findall(r"^\s*step \S+ json (\d+) ", body, re.M)
    assert re.search(r"\$PART == accuracy \]\] && SETUP_LIMIT=60 ENV_LIMIT=40", text)
    assert 60 + 40 + int(limit) <= 540
    missing = subprocess.run(
        ["bash", str(CHECK), "--part", "accuracy", "--results-from", str(tmp_path / "none")],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out2")},
    )
    assert missing.returncode == 2
    assert "--results-from" in missing.stderr
    assert not (tmp_path / "out2").exists()


def test_pack_leaves_one_archive_and_the_summary(tmp_path: Path) -> None:
    # the device tool brings back 8 files at most; with a spent budget every step is
    # skipped, so this runs in a second, on any machine
    out = tmp_path / "out"
    skipped = _spent_budget_run(out, "--part", "2", "--pack", "--device", "cpu")
    assert sorted(p.name for p in out.iterdir()) == ["gpu-check-part2.tar.gz", "summary.txt"]
    listing = subprocess.run(
        ["tar", "-tzf", str(out / "gpu-check-part2.tar.gz")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "./summary.txt" not in listing
    assert [line.split()[:2] for line in skipped if line] == [
        [step, "skip"]
        for step in (
            "setup",
            "environment",
            "gpu_layer_paths",
            "calibrate",
            "search",
            "whole_model_cost",
        )
    ]


def test_benchmark_flags_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    used = _invocations(BENCHMARK)
    assert set(used) == {
        "train_throughput",
        "fused_lanes",
        "whole_model_cost",
        "scaling",
        "gpu_speed",
        "speed_summary",
        "thesis_table",
        "trial_time",
    }
    unknown = {}
    for name, flags in used.items():
        script = load_script(name, tmp_path, monkeypatch)
        with pytest.raises(SystemExit) as exit_info:
            script.main(["--help"])
        assert exit_info.value.code == 0
        listed = set(FLAG.findall(capsys.readouterr().out))
        if flags - listed:
            unknown[name] = sorted(flags - listed)
    assert unknown == {}
    assert {"--device", "--compile", "--compile-mode"} <= used["fused_lanes"]
    assert {"--device", "--batch", "--profile-dir", "--json"} <= used["gpu_speed"]
    assert "--first" in used["speed_summary"]
    assert {"--runs", "--storage", "--timeout", "--val-limit"} <= used["trial_time"]
    assert {"--seeds", "--seed", "--rows", "--results"} <= used["thesis_table"]


def test_nasmlcn_flags_exist() -> None:
    used = _invocations(COMMAND)
    assert set(used) == {"calibrate", "data", "reproduce", "search", "train"}
    unknown = {}
    for command, flags in used.items():
        result = run_cli(command, "--help", env={"COLUMNS": "200"})
        assert result.returncode == 0, result.stderr
        listed = set(FLAG.findall(result.stdout))
        if flags - listed:
            unknown[command] = sorted(flags - listed)
    assert unknown == {}
    assert {"--run-on", "--storage", "--timeout"} <= used["search"]
    assert {"--workers-per-gpu", "--seed", "--no-prune", "--artifacts"} <= used["search"]
    assert {"--scale", "--out", "--json"} <= used["reproduce"]


@pytest.fixture
def fused_lanes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """``benchmarks/fused_lanes.py`` in this process; torch's thread count and
    dynamo's compiled graphs put back afterwards."""
    import torch

    threads = torch.get_num_threads()
    yield load_script("fused_lanes", tmp_path, monkeypatch)
    torch.set_num_threads(threads)
    torch._dynamo.reset()


def test_fused_lanes_times_the_compiled_model_beside_the_others(
    fused_lanes: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    # dynamo's capture and guards as on a GPU, without inductor's C++ build (about
    # 30 s for these models on this 2-core machine; the GPU run uses inductor)
    data, _ = run_json(fused_lanes, capsys, "--quick", "--compile", "--compile-backend", "eager")
    assert data["compile"] == {"mode": "default", "backend": "eager"}
    assert data["device"] == "cpu"
    for row in data["models"]:
        seconds = row["seconds"]
        assert set(seconds) == {"per_lane", "fused", "compiled"}
        assert min(seconds.values()) > 0
        assert row["compile_seconds"] > 0
        assert "compile_skipped" not in row
        assert row["compiled_speedup"] == pytest.approx(seconds["per_lane"] / seconds["compiled"])
        assert row["gflops"]["compiled"] == pytest.approx(row["flops"] / seconds["compiled"] / 1e9)
        assert set(row["batch1_seconds"]) == {"per_lane", "fused"}  # eager paths only


def test_a_compiler_that_fails_skips_its_path_with_the_reason(
    fused_lanes: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = run_json(
        fused_lanes,
        capsys,
        "--quick",
        "--model",
        "2*mlcn2:2x1",
        "--compile",
        "--compile-backend",
        "no-such-backend",
    )
    [row] = data["models"]
    assert set(row["seconds"]) == {"per_lane", "fused"}
    assert row["compile_skipped"].startswith("InvalidBackend: ")
    assert "no-such-backend" in row["compile_skipped"]
    assert "compiled_speedup" not in row


def test_accuracy_variants_are_one_step_a_variant(tmp_path: Path) -> None:
    """``--variants``: a recipe study in one call, a step a variant (its seeds in one
    process)."""
    args = ["--part", "accuracy", "--device", "cpu", "--seeds", "0 1"]
    variants = ["--variants", "augment=shift;lr=0.002 batch_size=50"]
    skipped = _spent_budget_run(tmp_path / "out", *args, *variants)
    assert [line.split()[0] for line in skipped if line] == [
        "setup",
        "environment",
        "accuracy_v1",
        "accuracy_v2",
    ]


def _spent_budget_run(out: Path, *args: str) -> list[str]:
    """The summary's step lines of a run with a spent budget: every step skipped, in
    order, in a second on any machine."""
    result = subprocess.run(
        ["bash", str(CHECK), *args, "--budget", "1"],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "OUT": str(out)},
    )
    assert result.returncode == 0, result.stderr
    return (out / "summary.txt").read_text().split("\n")[1:]
