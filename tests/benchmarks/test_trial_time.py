"""``benchmarks/trial_time.py`` keeping its study (``--storage``, as ``scripts/gpu_check.sh
--part speed`` runs the one-worker main job): its phases printed, the study where
``benchmarks/speed_summary.py`` reads its trials per hour."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks._scripts import load_script, run_json

# runs the benchmark script: with the other quick paths in CI (pytest -m slow
# tests/benchmarks), not in the default run
pytestmark = pytest.mark.slow


def test_a_kept_study_gives_the_phases_and_the_trials_per_hour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("trial_time", tmp_path, monkeypatch)
    db, artifacts = tmp_path / "w1.db", tmp_path / "weights"
    # one default-space trial (8xK80, 12GB) on 20 synthetic images: a few seconds here
    args = ["--runs", "1", "--trials", "1", "--train-limit", "20", "--val-limit", "10"]
    args += ["--dataset", "synthetic", "--run-on", "cpu", "--timeout", "600"]
    args += ["--storage", f"sqlite:///{db}", "--artifacts", str(artifacts)]
    data, err = run_json(script, capsys, *args, "--keep-weights", "best:1")
    assert data["device"] == "cpu"
    assert data["trials"] == 1
    assert data["stopped"] == ["trials"]
    assert len(data["job_seconds"]) == 1
    median = data["median"]
    assert median["training"] > 0
    assert data["outside_training"] == pytest.approx(median["wall"] - median["training"])
    assert "stopped: trials" in err
    assert db.is_file()
    assert artifacts.is_dir()  # the weights where asked, not beside the kept study
    assert not (tmp_path / "artifacts").exists()
    summary = load_script("speed_summary", tmp_path, monkeypatch)
    read, _ = run_json(summary, capsys, str(db))
    assert read[str(db)]["study"] == "s"
    assert read[str(db)]["all"]["trials"] == 1
    assert read[str(db)]["workers"] == 1


def test_a_kept_study_is_one_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("trial_time", tmp_path, monkeypatch)
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--storage", f"sqlite:///{tmp_path / 's.db'}"])  # --runs 2 by default
    assert exit_info.value.code == 2
    assert "--storage keeps one run's study: give --runs 1" in capsys.readouterr().err
    assert not (tmp_path / "s.db").exists()
