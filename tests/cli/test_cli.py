"""The command line, run as a user would: in this process (``run_cli``), and the
module entry point ``python -m nasmlcn`` once in a fresh process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import nasmlcn
from nasmlcn import SearchConfig
from nasmlcn.specs import MLCNSpec, save_arch
from tests.conftest import run_cli, run_cli_subprocess


def test_version_and_help() -> None:
    version = run_cli("--version")
    assert version.returncode == 0
    assert version.stdout.strip() == f"nasmlcn {nasmlcn.__version__}"
    helped = run_cli_subprocess("--help")  # python -m nasmlcn itself, end to end
    assert helped.stderr == ""
    assert helped.returncode == 0
    for command in ("train", "models", "data"):
        assert command in helped.stdout
    train_help = run_cli("train", "--help")
    assert "--lanes" in train_help.stdout
    assert "--json" in train_help.stdout


def test_train_json_on_real_fashion_mnist(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_cli(
        "train",
        "--lanes",
        "2*mlcn1:1x1",
        "--dataset",
        "fashion-mnist",
        "--data-dir",
        str(data_dir),
        "--epochs",
        "2",
        "--train-limit",
        "2000",
        "--val-limit",
        "500",
        "--test-limit",
        "500",
        "--seed",
        "3",
        "--out",
        str(out),
        "--json",
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)  # stdout is exactly one JSON object
    assert 0.4 < report["test_accuracy"] <= 1.0
    assert len(report["val_accuracy_per_epoch"]) == 2
    assert report["params"] > 0
    assert report["seconds_per_epoch"] > 0
    assert report["images_per_second"] > 0
    assert report["lanes"] == "2*mlcn1:1x1"
    assert {p.name for p in out.iterdir()} >= {"checkpoint.pt", "arch.json", "result.json"}
    assert json.loads((out / "result.json").read_text())["test_accuracy"] == report["test_accuracy"]
    assert "epoch 2/2" in result.stderr  # progress goes to stderr


def test_train_from_arch_file_and_capsnet_model(tmp_path: Path) -> None:
    arch = save_arch(MLCNSpec("mlcn1:1x1,mlcn2:1x1", decoder="reduced"), tmp_path / "arch.json")
    result = run_cli(
        "train",
        "--arch",
        str(arch),
        "--dataset",
        "synthetic",
        "--epochs",
        "1",
        "--train-limit",
        "100",
        "--val-limit",
        "20",
        "--test-limit",
        "20",
        "--out",
        str(tmp_path / "a"),
        "--json",
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["arch"]["decoder"] == "reduced"
    caps = run_cli(
        "train",
        "--model",
        "capsnet-tiny",
        "--dataset",
        "synthetic",
        "--epochs",
        "1",
        "--train-limit",
        "50",
        "--val-limit",
        "20",
        "--test-limit",
        "20",
        "--out",
        str(tmp_path / "c"),
    )
    assert caps.returncode == 0, caps.stderr
    assert "test accuracy" in caps.stdout
    row = next(line for line in caps.stdout.splitlines() if "training images" in line)
    assert row.split("│")[2].strip() == "50"


def test_a_train_limit_past_the_data_is_said_not_silently_clamped(tmp_path: Path) -> None:
    done = run_cli(
        *("train", "--lanes", "mlcn1:1x1", "--dataset", "synthetic", "--epochs", "1"),
        *("--train-limit", "1000000", "--val-limit", "20", "--test-limit", "20"),
        *("--out", str(tmp_path / "a"), "--quiet"),
        env={"COLUMNS": "200"},  # the row whole, on a terminal of any width
    )
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if "training images" in line)
    assert "(all there are: --train-limit 1,000,000 asked for more)" in row


@pytest.mark.slow  # 22 s; resuming is tested in tests/training and tests/cli/test_bad_input.py
def test_resume_through_the_cli(tmp_path: Path) -> None:
    common = (
        "train",
        "--lanes",
        "mlcn1:1x1",
        "--dataset",
        "synthetic",
        "--train-limit",
        "100",
        "--val-limit",
        "20",
        "--test-limit",
        "20",
        "--out",
        str(tmp_path),
        "--json",
        "--quiet",
        "--lr-policy",
        "exponential",  # extended below, which the default one-cycle schedule refuses
    )
    assert run_cli(*common, "--epochs", "1").returncode == 0
    refused = run_cli(*common, "--epochs", "2")
    assert refused.returncode != 0
    assert "pass --resume" in refused.stderr
    resumed = run_cli(*common, "--epochs", "2", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert len(json.loads(resumed.stdout)["val_accuracy_per_epoch"]) == 2


def _bad_arch_files(tmp_path: Path) -> dict[str, Path]:
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    broken = tmp_path / "broken.json"
    broken.write_text('{"kind": "mlcn", "lanes": ')
    return {"garbage": garbage, "broken": broken, "directory": tmp_path}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--lanes", "mlcn3:4x1"), "unknown lane type 'mlcn3'; did you mean"),
        (("--lanes", "mlcn1:0x1"), "lane width must be an integer >= 1, got 0"),
        (
            ("--dataset", "fashion_mnist"),
            "unknown dataset 'fashion_mnist'; did you mean 'fashion-mnist'",
        ),
        (("--data-dir", "/no/such/dir"), "data directory '/no/such/dir' does not exist"),
        (("--arch", "/no/such/arch.json"), "architecture file '/no/such/arch.json' does not exist"),
        (("--arch", "{garbage}"), "is not UTF-8 text"),
        (("--arch", "{broken}"), "not valid JSON"),
        (("--arch", "{directory}"), "is a directory"),
        (("--epochs", "0"), "--epochs must be an integer >= 1, got 0"),
        (("--model", "capsnett"), "unknown model 'capsnett'; did you mean 'capsnet'"),
        (("--lr-policy", "cosine"), "unknown learning-rate policy 'cosine'"),
        (
            ("--augment", "flip"),
            "unknown augmentation 'flip'; choose one of: crop, crop-flip, none, shift",
        ),
        (
            ("--lanes", "mlcn1:1x1", "--model", "capsnet"),
            "give only one of --lanes, --arch, --model",
        ),
        (("--run-on", "cuda:7"), "cuda:7"),
    ],
)
def test_bad_input_is_one_line_and_nonzero(
    tmp_path: Path, args: tuple[str, ...], expected: str
) -> None:
    files = _bad_arch_files(tmp_path)
    args = tuple(a.format(**files) for a in args)
    result = run_cli("train", *args, "--train-limit", "10", "--out", str(tmp_path / "out"))
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert expected in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "checkpoint.pt").exists()


def test_debug_shows_the_traceback() -> None:
    result = run_cli("--debug", "train", "--lanes", "mlcn3:1x1")
    assert result.returncode != 0
    assert "Traceback" in result.stderr


def test_models_and_data_listings() -> None:
    models = run_cli("models", "--json")
    assert models.returncode == 0
    names = {m["name"] for m in json.loads(models.stdout)["models"]}
    assert {"capsnet", "mlcn1-2x4", "mlcn2-8x4"} <= names
    data = run_cli("data", "list", "--json")
    assert {d["name"] for d in json.loads(data.stdout)} == {
        "cifar10",
        "fashion-mnist",
        "mnist",
        "svhn",
        "synthetic",
    }
    prepared = run_cli("data", "prepare", "synthetic")
    assert prepared.returncode == 0
    assert "nothing to prepare" in prepared.stdout


def test_debug_tracebacks_mask_passwords(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import nasmlcn.cli

    url = "postgresql://user:pw-debug-0451@db.example/nas"
    # a search's config shows its storage redacted, as every command does with
    # --storage: the password is now known
    assert SearchConfig(storage=url).to_dict()["storage"] == "postgresql://user:***@db.example/nas"

    class Failing:
        def main(self, **_: object) -> None:
            raise RuntimeError(f"driver said: could not connect to {url} (password pw-debug-0451)")

    monkeypatch.setattr(nasmlcn.cli.typer.main, "get_command", lambda _app: Failing())
    assert nasmlcn.cli.main(["--debug", "best"]) == nasmlcn.cli.EXIT_FAILURE
    stderr = capsys.readouterr().err
    assert "Traceback" in stderr
    assert "RuntimeError: driver said" in stderr
    assert "pw-debug-0451" not in stderr
    assert "user:***@db.example" in stderr
