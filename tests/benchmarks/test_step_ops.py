"""CI's guard on what a training step costs a GPU's host (launches and host work per step): the
aten ops of a step with lanes grouped as on a GPU stay within the bounds, whatever
the number of lanes of a kind, and the benchmark that prints them runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasmlcn.measure import count_step_ops
from nasmlcn.specs import CapsNetSpec, MLCNSpec
from tests.benchmarks._scripts import load_script, run_json

DEFAULT_SPACE_58 = "26*mlcn1:1x2,22*mlcn2:1x4,8*mlcn1:3x4,2*mlcn2:2x4"
BATCH = 8  # the count is the same at any batch (lanes grouped as on a GPU): checked below


@pytest.fixture(scope="module")
def capsnet_ops() -> int:
    return count_step_ops(CapsNetSpec(), BATCH).ops


def test_table_4_1_s_mlcn_costs_at_most_1_2x_capsnet_s_ops(capsnet_ops: int) -> None:
    mlcn = count_step_ops(MLCNSpec.from_lanes("8*mlcn2:4x1"), BATCH)
    assert mlcn.ops <= 1.2 * capsnet_ops, (mlcn.ops, capsnet_ops)  # 2.93x before stacking
    # one stack: its 7 tensors and the decoder's 6, not 7 per lane
    assert mlcn.optimizer_tensors == 7 + 6


def test_a_58_lane_default_space_model_costs_at_most_3x(capsnet_ops: int) -> None:
    mlcn = count_step_ops(MLCNSpec.from_lanes(DEFAULT_SPACE_58), BATCH)
    assert mlcn.ops <= 3 * capsnet_ops, (mlcn.ops, capsnet_ops)  # 22x before stacking
    assert mlcn.optimizer_tensors < 60  # 588 before


def test_a_stack_costs_the_same_ops_for_any_number_of_lanes() -> None:
    """The property the bounds rest on; and it can fail: lane by lane it grows."""
    few, many = (MLCNSpec.from_lanes(f"{n}*mlcn1:1x2") for n in (2, 16))
    assert count_step_ops(few, BATCH).ops == count_step_ops(many, BATCH).ops
    by_lane = [count_step_ops(spec, BATCH, fuse=False).ops for spec in (few, many)]
    assert by_lane[1] > by_lane[0] + 14 * 10  # at least 10 ops more per extra lane
    assert count_step_ops(few, 100).ops == count_step_ops(few, BATCH).ops


def test_the_benchmark_prints_every_model_and_its_ratio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("step_ops", tmp_path, monkeypatch)
    report, _ = run_json(script, capsys, "--quick")
    assert report["batch"] == BATCH
    rows = {row["model"]: row for row in report["models"]}
    assert list(rows) == ["capsnet", "8*mlcn2:4x1", "32*mlcn2:2x1"]
    assert rows["capsnet"]["vs_capsnet"] == 1.0
    ratio = rows["8*mlcn2:4x1"]["ops"] / rows["capsnet"]["ops"]
    assert rows["8*mlcn2:4x1"]["vs_capsnet"] == pytest.approx(ratio)
    assert rows["32*mlcn2:2x1"]["ops_lane_by_lane"] > 3 * rows["32*mlcn2:2x1"]["ops"]
