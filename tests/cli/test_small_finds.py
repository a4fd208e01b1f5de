"""The small things a new user tripped over, run as a user would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer.main

from nasmlcn.cli import app
from tests.conftest import run_cli


def test_no_blank_line_before_an_error_that_a_live_display_saw(tmp_path: Path) -> None:
    # the error comes out of the search, after its live display started (rich's
    # Progress.stop() wrote an empty line when stderr is not a terminal)
    result = run_cli(
        "search",
        "--evaluator",
        "proxy",
        "--devices",
        "9xFOO",
        "--storage",
        f"sqlite:///{tmp_path / 's.db'}",
    )
    assert result.returncode == 2
    assert result.stderr.startswith("error: unknown device 'FOO'"), repr(result.stderr)
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("lanes", "expected"),
    [
        ("mlcn1:0x1", "invalid lane 'mlcn1:0x1': lane width must be an integer >= 1, got 0"),
        ("mlcn1:1x0", "invalid lane 'mlcn1:1x0': lane depth must be an integer >= 1, got 0"),
    ],
)
def test_lane_errors_name_no_class(lanes: str, expected: str) -> None:
    result = run_cli("plan", "--lanes", lanes, "--devices", "1xK80")
    assert result.returncode == 2
    assert result.stderr.strip() == f"error: {expected}"
    assert "Spec" not in result.stderr


def test_architecture_file_errors_name_no_class(tmp_path: Path) -> None:
    arch = tmp_path / "arch.json"
    arch.write_text('{"kind": "mlcn", "lanes": ["mlcn1:1x1"], "num_classes": 1}')
    result = run_cli("estimate", "--arch", str(arch))
    assert result.returncode == 2
    assert "MLCN num_classes must be an integer >= 2, got 1" in result.stderr
    assert "Spec" not in result.stderr
    arch.write_text('{"kind": "mlcn", "lanes": ["mlcn1:1x1"], "widht": 3}')
    result = run_cli("estimate", "--arch", str(arch))
    assert "the mlcn architecture: unknown key 'widht'" in result.stderr
    assert "Spec" not in result.stderr


@pytest.mark.parametrize("command", ["train", "plan", "estimate"])
def test_an_arch_url_is_refused_as_written(command: str) -> None:
    url = "https://example.org/models/arch.json"
    result = run_cli(command, "--arch", url)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"'{url}' is a URL" in lines[0]  # not folded into the path 'https:/example.org/...'
    assert "give its path" in lines[0]
    assert "Traceback" not in result.stderr


def _commands() -> list[tuple[str, object]]:
    def walk(command: object, name: str) -> list[tuple[str, object]]:
        subs = getattr(command, "commands", None)
        if subs is None:
            return [(name, command)]
        return [pair for n, sub in subs.items() for pair in walk(sub, f"{name} {n}".strip())]

    return walk(typer.main.get_command(app), "")


def test_no_help_text_states_a_default_twice() -> None:
    doubled = []
    checked = 0
    for name, command in _commands():
        ctx = command.context_class(command, info_name=name)  # type: ignore[attr-defined]
        for param in command.params:  # type: ignore[attr-defined]
            if param.param_type_name != "option":
                continue
            record = param.get_help_record(ctx)
            checked += 1
            if record is not None and record[1].count("[default") > 1:
                doubled.append((name, record))
    assert checked > 100  # every command's options were read
    assert not doubled, doubled


def test_devices_imports_no_torch_where_no_gpu_can_be() -> None:
    code = (
        "import sys\n"
        "from nasmlcn.hardware._detect import _gpu_may_be_present\n"
        "from nasmlcn.cli import main\n"
        "gpu = _gpu_may_be_present()\n"
        "code = main(['devices'])\n"
        "print(code, gpu, 'torch' in sys.modules)\n"
    )
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    seconds = time.perf_counter() - started
    assert result.returncode == 0, result.stderr
    code_, gpu, imported = result.stdout.split()[-3:]
    assert code_ == "0"
    assert "detected on this machine" in result.stdout
    if gpu == "True":
        pytest.skip("a GPU may be present here: torch is asked, as it must be")
    assert imported == "False"  # torch's import was 4 of the command's 5 s
    assert seconds < 30  # generous: only a sanity bound on a loaded machine


def test_hidden_gpus_need_no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    import nasmlcn.hardware._detect as detect

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert detect._gpu_may_be_present() is False
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr(detect.os.path, "exists", lambda path: path == "/dev/nvidiactl")
    assert detect._gpu_may_be_present() is True
    monkeypatch.setattr(detect.os.path, "exists", lambda path: False)
    assert detect._gpu_may_be_present() is False


def test_train_places_lanes_on_devices_of_a_device_file(tmp_path: Path, data_dir: Path) -> None:
    """A device kind of one's own, searched with --device-file, could not be trained
    on: train said "add it with --device-file", an option it did not have."""
    catalog = tmp_path / "mine.toml"
    catalog.write_text(
        '[MYGPU]\nmemory = "16GiB"\npeak_flops = 10e12\nbandwidth = 500e9\nspeed = 2.0\n'
    )
    common = [
        *("train", "--lanes", "mlcn1:2x2,mlcn1:2x2", "--run-on", "cpu", "--epochs", "1"),
        *("--train-limit", "100", "--val-limit", "50", "--test-limit", "50", "--json"),
        *("--data-dir", str(data_dir)),
    ]
    unknown = run_cli(*common, "--devices", "2xMYGPU", "--out", str(tmp_path / "a"))
    assert unknown.returncode == 2
    assert unknown.stderr.startswith("error: unknown device 'MYGPU'")
    result = run_cli(
        *common, "--devices", "2xMYGPU", "--device-file", str(catalog), "--out", str(tmp_path / "b")
    )
    assert result.returncode == 0, result.stderr
    parallel = json.loads(result.stdout)["parallel"]
    assert sorted(set(parallel["assignment"])) == [0, 1]  # one lane on each MYGPU
    alone = run_cli(*common, "--device-file", str(catalog), "--out", str(tmp_path / "c"))
    assert alone.returncode == 2
    assert alone.stderr.strip() == (
        "error: --device-file gives the kinds that --devices names; give --devices too "
        "(e.g. --devices 2xMYGPU)"
    )
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(("given", "command"), [("-v", "search"), ("--debug", "best")])
def test_nasmlcn_s_own_options_after_the_command_get_a_hint(given: str, command: str) -> None:
    # said "No such option: -v" and no more
    result = run_cli(command, given)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: No such option: {given}; {given} is nasmlcn's own option: give it before "
        f"the command, as in nasmlcn {given} {command} ..."
    )


def test_one_thread_is_one_thread(tmp_path: Path) -> None:
    # evaluate printed "median of 5 passes, 1 threads"
    from nasmlcn.specs import MLCNSpec
    from tests._cli import run_cli_subprocess
    from tests.runs.conftest import write_run

    write_run(tmp_path / "run", MLCNSpec.from_lanes("mlcn1:1x1"), dataset="synthetic")
    shown = run_cli_subprocess(
        *("evaluate", "--run", str(tmp_path / "run"), "--test-limit", "10", "--passes", "1"),
        env={"OMP_NUM_THREADS": "1"},
    )
    assert shown.returncode == 0, shown.stderr
    text = " ".join(shown.stdout.split())
    assert "median of 1 pass, 1 thread" in text
    assert "threads" not in text
