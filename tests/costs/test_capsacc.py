"""The CapsAcc model (NASCaps sec. 3.2): against the public NASCaps code, NASCaps
Table 3, the real layer shapes, and as the cost model of ``--devices capsacc``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from nasmlcn.costs import (
    CAPSACC,
    CapsAccLayer,
    CostContext,
    estimate_capsacc,
    get_cost_model,
)
from nasmlcn.costs._capsacc import CLASS, CONV, PRIMARY, ROUTING, lane_layers
from nasmlcn.data import DATASETS
from nasmlcn.errors import SearchError, SpecError
from nasmlcn.hardware import parse_devices
from nasmlcn.planning import plan_model
from nasmlcn.search import OBJECTIVES, SearchConfig
from nasmlcn.specs import CapsNetSpec, LaneSpec, MLCNSpec, create_arch
from tests.benchmarks._scripts import load_script, run_json

CIFAR = DATASETS.get("cifar10")
PAPER = {"energy_mJ": 88.80, "latency_ms": 1.82, "memory_KiB": 8573.0}  # NASCaps Table 3


def _cifar_capsnet() -> CapsNetSpec:
    spec = create_arch("capsnet", input_shape=CIFAR.input_shape, num_classes=CIFAR.num_classes)
    assert isinstance(spec, CapsNetSpec)
    return spec


def test_layers_match_the_public_nascaps_code() -> None:
    # Oracle: github.com/ehw-fit/nascaps (commit 5a6de24), nsga/hw_estimator.py run on
    # chroms/chrom_capsnet.chr printed, per layer, cycles 2096 / 381968 / 207441 /
    # 3249 and energies 0.0023274755328 / 88.71510113149441 / 0.0790031580624 /
    # 0.0012373699536 mJ (its ConvLayer, CapsLayer, ClassLayer, SumUpdateLayer).
    layers = [
        (CapsAccLayer("conv1", CONV, 784, 1, 1, 9, 784, 256, 1), 2096, 0.0023274755328),
        (CapsAccLayer("caps1", PRIMARY, 784, 256, 1, 9, 196, 32, 8), 381968, 88.71510113149441),
        (CapsAccLayer("class", CLASS, 81, 32, 8, 9, 1, 10, 16), 207441, 0.0790031580624),
        (CapsAccLayer("sum", ROUTING, 81, 32, 8, 9, 1, 10, 16), 3249, 0.0012373699536),
    ]
    for layer, cycles, energy_mj in layers:
        est = layer.estimate()
        assert est.cycles == cycles, layer.name
        assert est.energy_j * 1e3 == pytest.approx(energy_mj, rel=1e-9), layer.name


def test_benchmark_reproduces_table_3_with_the_nascaps_descriptor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("capsacc_table3", tmp_path, monkeypatch)
    result = script.compare()
    # the paper prints 3 significant digits: 1.8233 ms is "1.82 ms"
    for key, ratio in result["nascaps"]["ratio_to_paper"].items():
        assert 0.997 <= ratio <= 1.003, (key, ratio)
    assert result["ours"]["figures"] == pytest.approx(_ours_figures(), rel=1e-12)
    printed, _ = run_json(script, capsys)
    assert printed["nascaps"]["figures"] == pytest.approx(result["nascaps"]["figures"])


def _ours_figures() -> dict[str, float]:
    est = estimate_capsacc(_cifar_capsnet())
    return {
        "energy_mJ": est.energy_j * 1e3,
        "latency_ms": est.latency_s * 1e3,
        "memory_KiB": est.memory_bytes / 1024,
    }


def test_capsnet_on_cifar10_against_table_3() -> None:
    # Our CapsNet from its real CIFAR-10 shapes: energy and memory within 10 % of
    # Table 3; latency 12.5 % below it, explained in nasmlcn/reproduce/engines/capsacc_table3.py
    # (the paper's descriptor is 28x28 with a 14x14 primary grid and a 9x9
    # class window; ours has an 8x8 grid).
    ours = _ours_figures()
    ratio = {k: ours[k] / PAPER[k] for k in PAPER}
    assert 0.90 <= ratio["energy_mJ"] <= 1.0, ratio
    assert 0.90 <= ratio["memory_KiB"] <= 1.0, ratio
    assert 0.86 <= ratio["latency_ms"] <= 0.89, ratio


def test_capsnet_layers_follow_the_real_shapes() -> None:
    spec = _cifar_capsnet()
    est = estimate_capsacc(spec)
    kinds = [e.layer.kind for e in est.layers]
    # conv, primary caps, class caps, 2r - 1 routing operations for r = 3
    assert kinds == [CONV, PRIMARY, CLASS] + [ROUTING] * 5
    conv, primary = spec.layout.convs
    # Table 1's ConvCaps weights, (ch_in k^2 + 1) ch_out, are the convolution's parameters
    assert est.layers[0].layer.weights == conv.params
    assert est.layers[1].layer.weights == primary.params
    # the class layer's transform matrices: 2048 capsules x 8 x 10 classes x 16
    assert spec.layout.num_primary == 2048
    votes = spec.layout.num_primary * 8 * 10 * 16
    assert est.layers[2].layer.weights == votes + 8 * 10 * 16  # + Table 1's "+1" row
    # 24x24 input to the primary layer, 8x8 out: data_per_weight = 64 * 256
    assert est.layers[1].layer.data_per_weight == 8 * 8 * 256
    # nearly all energy is the primary layer's (20,992 sums per output)
    assert est.layers[1].energy_j / est.energy_j > 0.99


def test_lane_layers_follow_routing_and_depth() -> None:
    ctx = CostContext(input_shape=(3, 32, 32))
    deep = lane_layers(LaneSpec("mlcn1", 2, 3), ctx)
    assert [layer.kind for layer in deep] == [CONV] * 3 + [PRIMARY, CLASS, ROUTING]
    classwise = lane_layers(LaneSpec("mlcn1", 2, 1), CostContext(routing="classwise"))
    assert [layer.kind for layer in classwise].count(ROUTING) == 5
    primary = deep[3]  # 2w capsule channels of 8-D on a 8x8 grid (32 -> 24 -> 8)
    assert (primary.ch_out, primary.caps_out, primary.positions_out) == (4, 8, 64)


def test_memory_is_one_byte_per_weight_and_latency_sums_cycles() -> None:
    est = estimate_capsacc(MLCNSpec.from_lanes("mlcn1:1x1,mlcn2:2x2"))
    assert est.memory_bytes == sum(e.layer.weights for e in est.layers)
    assert est.latency_s == pytest.approx(est.cycles * CAPSACC.period_s, rel=1e-12)
    assert est.cycles == sum(e.cycles for e in est.layers)


def test_bad_layer_is_refused_with_its_field() -> None:
    with pytest.raises(SpecError, match="ch_in"):
        CapsAccLayer("x", CONV, 4, 0, 1, 3, 4, 1, 1)
    with pytest.raises(SpecError, match="kind"):
        CapsAccLayer("x", "pool", 4, 1, 1, 3, 4, 1, 1)


def test_cost_model_predicts_capsacc_latency_and_weight_memory() -> None:
    model = get_cost_model("capsacc")
    ctx = CostContext(input_shape=(3, 32, 32), batch_size=32)
    lane = LaneSpec("mlcn2", 4, 2)
    cost = model.lane_cost(lane, ctx)
    est = estimate_capsacc(MLCNSpec((lane,), input_shape=(3, 32, 32)))
    assert cost.inference_time == pytest.approx(est.latency_s, rel=1e-12)
    assert cost.time == pytest.approx(32 * est.latency_s, rel=1e-12)  # a batch of inferences
    assert cost.memory_bytes == est.memory_bytes
    assert model.head_cost(4, ctx).memory_bytes == 0


def test_capsacc_devices_pick_the_capsacc_cost_model() -> None:
    """When the search is set up (a config alone reads no device catalog)."""
    from nasmlcn.search import setup_search

    def chosen(**fields: Any) -> str:
        return setup_search(SearchConfig(evaluator="proxy", **fields)).config.cost_model

    assert chosen(devices="capsacc") == "capsacc"
    assert chosen(devices="2xcapsacc", cost_model="capsacc") == "capsacc"
    assert chosen(devices="8xK80") == "analytic"
    with pytest.raises(SearchError, match="thesis"):
        chosen(devices="capsacc", cost_model="thesis")
    with pytest.raises(SearchError, match="mix cost models"):
        chosen(devices="capsacc,1xK80")


def test_energy_objective_needs_capsacc_and_grows_with_the_model() -> None:
    from nasmlcn.search import setup_search

    with pytest.raises(SearchError, match="capsacc"):
        setup_search(SearchConfig(devices="8xK80", objectives=("accuracy", "energy")))
    energy = OBJECTIVES.get("energy")
    devices = parse_devices("capsacc")

    def value(lanes: str) -> float:
        plan = plan_model(MLCNSpec.from_lanes(lanes), devices, cost_model="capsacc")
        return energy.value(plan, None)

    small, large = value("mlcn2:2x1"), value("2*mlcn2:2x1,mlcn1:3x2")
    assert 0 < small < large
    assert math.isfinite(large)
    # the sum of the lanes' CapsAcc energy, in mJ
    spec = MLCNSpec.from_lanes("mlcn2:2x1")
    assert small == pytest.approx(estimate_capsacc(spec).energy_j * 1e3, rel=1e-12)
    analytic = plan_model(MLCNSpec.from_lanes("mlcn2:2x1"), parse_devices("1xK80"))
    with pytest.raises(SearchError, match="capsacc"):
        energy.value(analytic, None)


def test_proxy_search_on_capsacc_devices_is_nascaps_style(tmp_path: Path) -> None:
    from nasmlcn.search import run_search

    config = SearchConfig(
        devices="capsacc",
        objectives=("accuracy", "energy", "latency", "memory"),
        sampler="nsga2",
        evaluator="proxy",
        dataset="cifar10",
        trials=4,
        epochs=2,
        prune=False,
        storage=f"sqlite:///{tmp_path / 's.db'}",
    )
    data = run_search(config).to_dict()
    assert data["completed"] == 4
    assert data["metric_names"] == ["accuracy", "energy_mJ", "latency_s", "memory_MiB"]
    for trial in data["best"]:
        spec = MLCNSpec.from_lanes(trial["lanes"], input_shape=CIFAR.input_shape)
        est = estimate_capsacc(spec)
        values = trial["values"]
        assert values["energy_mJ"] == pytest.approx(est.energy_j * 1e3, rel=1e-9)
        # one device: the step is the batch's inferences; memory the 8-bit weights
        assert values["latency_s"] == pytest.approx(est.latency_s * config.batch_size, rel=1e-9)
        assert values["memory_MiB"] == pytest.approx(est.memory_bytes / 2**20, rel=1e-9)
        assert trial["predicted"]["cost_model"] == "capsacc"


def test_a_device_file_s_unknown_cost_model_is_refused_where_it_is_read(tmp_path: Path) -> None:
    # it used to be listed by 'devices' and fail later without naming the file
    from tests.conftest import run_cli

    path = tmp_path / "d.toml"
    path.write_text(
        '[X1]\nmemory = "12GiB"\npeak_flops = 4e12\nbandwidth = 2e11\nspeed = 1.0\n'
        'cost_model = "foo"\n'
    )
    expected = (
        f"error: device file {str(path)!r}: [X1] cost_model: unknown cost model 'foo'; "
        "choose one of: analytic, calibrated, capsacc, thesis"
    )
    for args in (
        ("devices", "--device-file", str(path)),
        ("plan", "--devices", "2xX1", "--device-file", str(path), "--lanes", "mlcn2:1x1"),
        ("search", "--devices", "2xX1", "--device-file", str(path), "--evaluator", "proxy",
         "--storage", f"sqlite:///{tmp_path / 's.db'}"),
    ):  # fmt: skip
        done = run_cli(*args)
        assert done.returncode == 2
        assert done.stderr.strip().splitlines() == [expected]
    assert not (tmp_path / "s.db").exists()
