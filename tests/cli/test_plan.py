"""``nasmlcn devices`` and ``nasmlcn plan``, run as a user would."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nasmlcn.specs import MLCNSpec, save_arch
from tests.conftest import run_cli

MIX = "1xK80,1xM40,1xP100,1xV100"


def test_devices_json_lists_catalog_and_this_machine() -> None:
    result = run_cli("devices", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    names = [d["name"] for d in data["catalog"]]
    assert {"K80", "M40", "P100", "V100", "T4", "A100", "H100", "H200", "cpu"} <= set(names)
    assert data["detected"][0]["name"] == "cpu"
    assert data["detected"][0]["cores"] >= 1
    assert {d["name"]: d["cost_model"] for d in data["catalog"]}["capsacc"] == "capsacc"
    table = run_cli("devices", env={"COLUMNS": "100"})
    assert table.returncode == 0
    rows = {line.split()[1]: line.split() for line in table.stdout.splitlines() if "│" in line}
    assert rows["capsacc"][-2] == "capsacc"  # the cost model it declares
    assert rows["K80"][-2] == "any"
    assert "detected" in table.stdout


@pytest.mark.parametrize("strategy", ["greedy", "random"])
def test_plan_json_contract(strategy: str) -> None:
    lanes = "mlcn1:4x2,mlcn2:2x1,mlcn2:2x3,3*mlcn1:2x4,mlcn1:5x5"
    result = run_cli("plan", "--devices", MIX, "--lanes", lanes, "--strategy", strategy, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    costs = data["lane_costs"]
    assert len(costs) == 7
    assert all(c > 0 for c in costs)
    assert costs[3] == costs[4] == costs[5]  # in the order given
    assert [d["name"] for d in data["devices"]] == ["K80:0", "M40:1", "P100:2", "V100:3"]
    assert [d["speed"] for d in data["devices"]] == [1.0, 3.1, 4.2, 6.0]
    assert all(d["memory_bytes"] > 0 for d in data["devices"])
    placed = sorted(i for d in data["devices"] for i in d["lanes"])
    assert placed == list(range(7))
    recomputed = max(sum(costs[i] for i in d["lanes"]) / d["speed"] for d in data["devices"])
    assert data["makespan"] == pytest.approx(recomputed, rel=1e-12)
    ideal = sum(costs) / sum(d["speed"] for d in data["devices"])
    assert data["ideal_makespan"] == pytest.approx(ideal, rel=1e-12)
    assert data["imbalance"] == pytest.approx(recomputed / ideal - 1, rel=1e-9)
    # No placement beats the optimal one: 0.42 (greedy finds it), random's draw 1.59
    optimal = data["comparison"]["optimal"]["makespan"]
    assert data["imbalance"] >= optimal / ideal - 1 - 1e-12
    assert data["imbalance"] > 0.4
    others = set(data["comparison"])
    assert strategy not in others, others
    assert others, others


def test_plan_table_from_arch_file_with_thesis_model(tmp_path: Path) -> None:
    path = save_arch(MLCNSpec.from_lanes("4*mlcn2:3x2"), tmp_path / "arch.json")
    result = run_cli(
        "plan", "--devices", "2xK80", "--mem", "12GB", "--arch", str(path), "--cost-model", "thesis"
    )
    assert result.returncode == 0, result.stderr
    assert "makespan" in result.stdout
    assert "K80:1" in result.stdout
    assert "w2d" in result.stdout
    assert "imbalance 0.0%" in result.stdout  # 4 equal lanes on 2 equal devices


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--devices", "8xK8O", "--lanes", "mlcn1:1x1"),
            "unknown device 'K8O'; did you mean 'K80'",
        ),
        (("--devices", "0xK80", "--lanes", "mlcn1:1x1"), "count must be >= 1"),
        (("--devices", "2xK80", "--mem", "12XB", "--lanes", "mlcn1:1x1"), "unknown unit 'XB'"),
        (("--devices", "2xK80", "--mem", "0GB", "--lanes", "mlcn1:1x1"), "more than 0 bytes"),
        (
            ("--devices", "2xK80", "--mem", "12", "--lanes", "mlcn1:1x1"),
            "error: --mem 12: give a unit, e.g. 12GB or 12GiB",
        ),
        (("--devices", "2xK80", "--lanes", "mlcn3:1x1"), "unknown lane type 'mlcn3'"),
        (
            ("--devices", "2xK80", "--lanes", "mlcn1:1x1", "--strategy", "gredy"),
            "did you mean 'greedy'",
        ),
        (
            ("--devices", "2xK80", "--lanes", "mlcn1:1x1", "--cost-model", "tesis"),
            "did you mean 'thesis'",
        ),
        (("--devices", "2xK80", "--mem", "50MiB", "--lanes", "2*mlcn1:5x5"), "largest free memory"),
        (("--devices", "2xK80"), "exactly one of --lanes or --arch"),
        (("--devices", "2xK80", "--arch", "/nonexistent.json"), "does not exist"),
    ],
)
def test_plan_errors_are_one_line(args: tuple[str, ...], message: str) -> None:
    result = run_cli("plan", *args)
    assert result.returncode != 0
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_plan_on_capsacc_uses_the_devices_own_cost_model() -> None:
    result = run_cli("plan", "--devices", "capsacc", "--lanes", "2*mlcn2:4x1", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["cost_model"] == "capsacc"
    other = run_cli(
        "plan", "--devices", "capsacc", "--lanes", "2*mlcn2:4x1", "--cost-model", "thesis"
    )
    assert other.returncode == 2
    assert "--cost-model 'thesis'" in other.stderr
    assert "Traceback" not in other.stderr
