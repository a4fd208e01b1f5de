"""``nasmlcn search`` refuses a file with a misspelled key (space, recipe, device file,
calibration file) in one line with a "did you mean", exit 2, no traceback, and no
study created."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_cli


def _calibration(path: Path) -> Path:
    from nasmlcn.costs import Calibration, CostContext

    data = Calibration(
        device="cpu",
        speed=0.15,
        context=CostContext(),
        threads=2,
        time_coefficients=(1e-9,) * len(Calibration.time_features),  # one per feature
        memory_coefficients=(1.0,) * len(Calibration.memory_features),
    ).to_dict()
    data["context"]["batch_sise"] = data["context"].pop("batch_size")
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("option", "source", "old", "new", "expected"),
    [
        (
            "--space",
            "search_spaces/mlcn-buckets.toml",
            "width =",
            "widht =",
            "unknown key 'widht'; did you mean 'width'?",
        ),
        (
            "--config",
            "studies/thesis-fig6.2.toml",
            "epochs =",
            "epoch =",
            "unknown key 'epoch'; did you mean 'epochs'?",
        ),
        (
            "--device-file",
            "nasmlcn/hardware/devices.toml",
            "\nspeed =",
            "\nsped =",
            "unknown key 'sped' in [K80]; did you mean 'speed'?",
        ),
        (
            "--calibration",
            "",
            "",
            "",
            "unknown key 'batch_sise' in context; did you mean 'batch_size'?",
        ),
    ],
)
def test_search_refuses_a_misspelled_key_in_one_line(
    tmp_path: Path, option: str, source: str, old: str, new: str, expected: str
) -> None:
    if source:
        text = (ROOT / source).read_text()
        assert old in text
        path = tmp_path / f"mine{Path(source).suffix}"
        path.write_text(text.replace(old, new, 1))
    else:
        path = _calibration(tmp_path / "mine.json")
    before = path.read_bytes()
    extra = ("--cost-model", "calibrated") if option == "--calibration" else ()
    db = tmp_path / "s.db"
    result = run_cli(
        "search",
        option,
        str(path),
        *extra,
        "--evaluator",
        "proxy",
        "--trials",
        "1",
        "--storage",
        f"sqlite:///{db}",
    )
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert expected in lines[0], lines[0]
    assert repr(str(path)) in lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    assert not db.exists()
    assert path.read_bytes() == before
