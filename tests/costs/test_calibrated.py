"""The calibrated cost model: its file, its fit, its predictions, and real measurements."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from nasmlcn.costs import (
    CalibratedCostModel,
    CostContext,
    LaneSample,
    calibration_lanes,
    get_cost_model,
    relative_speeds,
    score_cost_model,
)
from nasmlcn.costs._calibration_file import SCHEMA_VERSION, Calibration
from nasmlcn.costs._features import MEMORY_FEATURES, TIME_FEATURES, memory_features, time_features
from nasmlcn.costs._fit import cross_validated, fit_calibration, fit_samples
from nasmlcn.errors import CalibrationError
from nasmlcn.specs import LaneSpec, MLCNSpec

CTX = CostContext(batch_size=100)
# Seconds per unit of TIME_FEATURES and bytes per unit of MEMORY_FEATURES, of the
# order measured on a 2-core CPU.
TIME_TRUTH = (5e-12, 6e-8, 0.0, 1e-7, 1.2e-3, 2.4e-3)
MEMORY_TRUTH = (1.0, 1.05, 750.0, 1.5e6)


def _dot(c: tuple[float, ...], f: list[float]) -> float:
    return math.fsum(a * b for a, b in zip(c, f, strict=True))


def synthetic_samples(count: int = 24, seed: int = 0) -> list[LaneSample]:
    """Lanes whose 'measurements' follow the TRUTH coefficients exactly."""
    return [
        LaneSample(
            lane,
            _dot(TIME_TRUTH, time_features(lane, CTX)),
            round(_dot(MEMORY_TRUTH, memory_features(lane, CTX))),
        )
        for lane in calibration_lanes(count, seed)
    ]


@pytest.fixture(scope="module")
def calibration() -> Calibration:
    return fit_calibration(
        synthetic_samples(),
        CTX,
        device="cpu",
        speed=0.15,
        threads=2,
        fc_flops_per_second={"cpu": 3.5e10},
        device_speeds={"cpu": 0.15},
        speed_anchor="cpu = catalog cpu speed 0.15",
        torch_version="2.x",
        load_average=1.5,
    )


def test_import_costs_loads_neither_torch_nor_numpy() -> None:
    code = "import sys, nasmlcn.costs; print('torch' in sys.modules, 'numpy' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]


def test_calibration_lanes_are_seeded_distinct_and_in_range() -> None:
    lanes = calibration_lanes(30, seed=4)
    assert lanes == calibration_lanes(30, seed=4) != calibration_lanes(30, seed=5)
    assert len(set(lanes)) == 30
    assert all(1 <= lane.width <= 5 and 1 <= lane.depth <= 5 for lane in lanes)
    assert {lane.type for lane in lanes} == {"mlcn1", "mlcn2"}
    assert len(calibration_lanes(60)) == 60  # repeats once the 50 lanes are used up
    small = calibration_lanes(5, max_width=2, max_depth=2)
    assert all(lane.width <= 2 and lane.depth <= 2 for lane in small)


def test_relative_speeds_scale_by_fc_throughput() -> None:
    speeds = relative_speeds({"cuda:0": 2e12, "cpu": 4e10}, "cuda:0", 25.0)
    assert speeds == {"cuda:0": 25.0, "cpu": pytest.approx(0.5)}
    with pytest.raises(ValueError, match="anchor"):
        relative_speeds({"cpu": 1.0}, "cuda:0", 1.0)


def test_fit_recovers_known_coefficients() -> None:
    fit = fit_samples(synthetic_samples(), CTX)
    assert fit.time_coefficients == pytest.approx(TIME_TRUTH, rel=1e-5, abs=1e-16)
    assert fit.memory_envelope == pytest.approx(1.0, abs=1e-6)
    assert fit.memory_coefficients == pytest.approx(MEMORY_TRUTH, rel=1e-4)


def test_memory_fit_is_an_upper_envelope_of_its_samples() -> None:
    samples = synthetic_samples()
    # One lane needs 20 % more than the rest of the data says: the envelope covers it.
    bumped = [replace(samples[0], peak_bytes=round(samples[0].peak_bytes * 1.2)), *samples[1:]]
    cal = fit_calibration(bumped, CTX, device="cpu", speed=0.15, threads=2)
    assert cal.memory_envelope > 1.0
    assert all(cal.memory_bytes(s.lane, CTX) >= s.peak_bytes for s in bumped)


def test_predictions_convert_local_seconds_to_speed_one_seconds(calibration: Calibration) -> None:
    model = CalibratedCostModel(calibration)
    lane = LaneSpec("mlcn1", 3, 2)
    cost = model.lane_cost(lane, CTX)
    local = _dot(TIME_TRUTH, time_features(lane, CTX))
    assert calibration.local_seconds(lane, CTX) == pytest.approx(local, rel=1e-5)
    assert cost.time == pytest.approx(local * 0.15, rel=1e-5)  # a K80 would be 1/0.15x faster
    assert cost.memory_bytes == calibration.memory_bytes(lane, CTX) > 0
    assert cost.params > 0
    assert cost.train_flops > 0


@pytest.mark.parametrize("lane_type", ["mlcn1", "mlcn2"])
@pytest.mark.parametrize("depth", [1, 3, 5])
def test_predictions_are_positive_and_monotone_in_width(
    calibration: Calibration, lane_type: str, depth: int
) -> None:
    model = CalibratedCostModel(calibration)
    costs = [model.lane_cost(LaneSpec(lane_type, w, depth), CTX) for w in range(1, 9)]
    times = [c.time for c in costs]
    memory = [c.memory_bytes for c in costs]
    assert all(t > 0 for t in times)
    assert all(m > 0 for m in memory)
    assert times == sorted(times)
    assert len(set(times)) == len(times)
    assert memory == sorted(memory)
    assert len(set(memory)) == len(memory)


def test_head_and_model_costs(calibration: Calibration) -> None:
    model = get_cost_model("calibrated", calibration=calibration)
    head = model.head_cost(4, CTX)
    assert head.time > 0
    assert head.memory_bytes > 0
    assert head.params > 0
    spec = MLCNSpec.from_lanes("2*mlcn1:2x2,mlcn2:3x1")
    cost = model.model_cost(spec, batch_size=100)
    assert len(cost.lanes) == 3
    assert cost.memory_bytes > sum(c.memory_bytes for c in cost.lanes)
    # Without a decoder only the class capsules remain: no weights, a little time.
    none = model.head_cost(4, replace(CTX, decoder="none"))
    assert none.params == 0
    assert 0 < none.time < head.time
    assert none.memory_bytes < head.memory_bytes


def test_score_and_cross_validation_on_exact_data(calibration: Calibration) -> None:
    score = score_cost_model(CalibratedCostModel(calibration), calibration.samples, CTX, 0.15)
    assert score.time.pearson == pytest.approx(1.0)
    assert score.time.mape_scaled < 1e-3
    assert score.time.mape is not None
    assert score.time.mape < 1e-3
    assert score.memory.under_share == 0.0
    assert score.memory.mape_scaled < 1e-3
    seconds, peaks = cross_validated(calibration, folds=4)
    for s, t, p in zip(calibration.samples, seconds, peaks, strict=True):
        assert t == pytest.approx(s.seconds, rel=1e-4)
        assert p == pytest.approx(s.peak_bytes, rel=1e-3)
    thesis = score_cost_model(get_cost_model("thesis"), calibration.samples, CTX, 0.15)
    assert thesis.time.mape is None
    assert "scale" in thesis.note


# ---- the calibration file ----


def test_json_round_trip_and_atomic_save(calibration: Calibration, tmp_path: Path) -> None:
    assert Calibration.from_json(calibration.to_json()) == calibration
    path = calibration.save(tmp_path / "sub" / "calibration.json")
    assert Calibration.load(path) == calibration
    assert [p.name for p in path.parent.iterdir()] == ["calibration.json"]  # no temp files
    data = json.loads(path.read_text())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["time_features"] == list(TIME_FEATURES)
    assert data["memory_features"] == list(MEMORY_FEATURES)
    assert len(data["samples"]) == 24
    assert data["device"] == "cpu"
    assert data["hostname"]
    assert data["created"].endswith("Z")


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(schema_version=SCHEMA_VERSION + 1), "newer than this nasmlcn"),
        (lambda d: d.update(schema_version=0), "schema version 0"),
        (lambda d: d.pop("device"), "missing field 'device'"),
        (lambda d: d.update(speed=-1), "speed must be"),
        (lambda d: d.update(threads="two"), "threads must be"),
        (lambda d: d["time_coefficients"].__setitem__(0, -1.0), "time coefficient"),
        (lambda d: d["memory_coefficients"].pop(), "memory needs 4 coefficients"),
        (lambda d: d.update(time_features=["flops"]), "time features"),
        (lambda d: d["context"].update(routing="diagonal"), "invalid field"),
        (lambda d: d["samples"][0].update(lane="mlcn9:1x1"), "invalid field"),
        (lambda d: d["samples"][0].update(seconds=0), "must be > 0"),
    ],
)
def test_invalid_files_give_calibration_errors(
    calibration: Calibration, tmp_path: Path, edit: object, message: str
) -> None:
    data = calibration.to_dict()
    edit(data)  # type: ignore[operator]
    path = _write(tmp_path, data)
    with pytest.raises(CalibrationError, match=message) as info:
        Calibration.load(path)
    assert str(path) in str(info.value)


def test_unreadable_files_give_calibration_errors(tmp_path: Path) -> None:
    with pytest.raises(CalibrationError, match="does not exist; run 'nasmlcn calibrate'"):
        Calibration.load(tmp_path / "missing.json")
    with pytest.raises(CalibrationError, match="is a directory"):
        Calibration.load(tmp_path)
    with pytest.raises(CalibrationError, match="not valid JSON"):
        Calibration.load(_write(tmp_path, "{not json"))
    with pytest.raises(CalibrationError, match="must be a JSON object"):
        Calibration.load(_write(tmp_path, [1, 2]))
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00")
    with pytest.raises(CalibrationError, match="not UTF-8"):
        Calibration.load(tmp_path / "binary.json")


def test_model_reads_the_default_file(
    calibration: Calibration, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "none.json"
    monkeypatch.setenv("NASMLCN_CALIBRATION", str(missing))
    with pytest.raises(CalibrationError, match="nasmlcn calibrate"):
        get_cost_model("calibrated")
    calibration.save(missing)
    assert CalibratedCostModel().calibration == calibration
    other = calibration.save(tmp_path / "other.json")
    model = get_cost_model("calibrated", calibration_file=str(other))
    assert isinstance(model, CalibratedCostModel)
    assert model.calibration == calibration
    with pytest.raises(ValueError, match="not both"):
        CalibratedCostModel(calibration, calibration_file=str(other))


def test_other_context_is_predicted_with_a_warning(
    calibration: Calibration, caplog: pytest.LogCaptureFixture
) -> None:
    model = CalibratedCostModel(calibration)
    other = CostContext(input_shape=(3, 32, 32), batch_size=100)
    with caplog.at_level("WARNING", logger="nasmlcn.costs._calibrated"):
        model.lane_cost(LaneSpec("mlcn1", 1, 1), other)
        model.lane_cost(LaneSpec("mlcn1", 2, 1), other)
    assert sum("extrapolates" in r.message for r in caplog.records) == 1  # once per context


# ---- real measurements (torch) ----


@pytest.fixture
def keep_torch_threads() -> Iterator[None]:
    """Measurements set torch's process-wide thread count; later tests get it back."""
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.mark.usefixtures("keep_torch_threads")
def test_real_measurements_of_small_lanes() -> None:
    from nasmlcn.measure import (
        PeakSettings,
        StepTiming,
        lane_peak_memories,
        measure_fc_speed,
        time_lane_step,
    )

    speed = measure_fc_speed("cpu", warmup=1, repeats=3, steps_per_repeat=2, threads=1)
    assert speed.flops_per_second > 0
    assert speed.threads == 1
    ctx = CostContext(batch_size=8)
    lanes = [LaneSpec("mlcn1", 1, 1), LaneSpec("mlcn2", 1, 2), LaneSpec("mlcn1", 2, 1)]
    timings = [
        time_lane_step(lane, ctx, timing=StepTiming(1, 1, 0.0, 1, clock), threads=1)
        for lane, clock in zip(lanes, ["wall", "cpu", "wall"], strict=True)
    ]
    assert all(t.seconds > 0 and t.steps == 1 for t in timings)
    assert timings[1].clock == "cpu"
    peaks = lane_peak_memories(lanes, ctx, memory=PeakSettings(steps=1, jobs=2), threads=1)
    assert all(p > 0 for p in peaks)
    # The larger lane needs more memory (its weights and maps are 2-4x larger).
    assert peaks[2] > peaks[0]


@pytest.mark.usefixtures("keep_torch_threads")
def test_cpu_clock_needs_one_cpu_thread() -> None:
    from nasmlcn.measure import StepTiming, time_lane_step

    lane = LaneSpec("mlcn1", 1, 1)
    with pytest.raises(ValueError, match="1 thread"):
        time_lane_step(
            lane, CostContext(batch_size=2), timing=StepTiming(rounds=1, clock="cpu"), threads=2
        )
    with pytest.raises(ValueError, match="clock must be"):
        time_lane_step(
            lane, CostContext(batch_size=2), timing=StepTiming(rounds=1, clock="sundial"), threads=1
        )


@pytest.mark.gpu
def test_real_measurements_on_cuda() -> None:
    from nasmlcn.measure import StepTiming, lane_peak_memory, measure_fc_speed, time_lane_step

    assert measure_fc_speed("cuda:0", repeats=3).flops_per_second > 0
    ctx = CostContext(batch_size=16)
    lane = LaneSpec("mlcn1", 2, 2)
    assert time_lane_step(lane, ctx, "cuda:0", timing=StepTiming(2, 2, 0.0, 1)).seconds > 0
    assert lane_peak_memory(lane, ctx, "cuda:0", steps=2) > 0


def test_inference_time_is_derived_from_the_fit(calibration: Calibration) -> None:
    lane = LaneSpec("mlcn2", 3, 2)
    full = CalibratedCostModel(calibration)
    cost = full.lane_cost(lane, CTX)
    # one image forward only: less than a step, more than its share of one (the fit's
    # per-layer and per-pass costs are not shared by 100 images at batch 1)
    assert cost.time / CTX.batch_size < cost.inference_time < cost.time
    head = full.head_cost(3, CTX)
    assert 0 < head.inference_time < full.head_cost(3, replace(CTX, decoder="none")).time

    def only(feature: str) -> CalibratedCostModel:
        c = tuple(1e-9 if f == feature else 0.0 for f in TIME_FEATURES)
        return CalibratedCostModel(replace(calibration, time_coefficients=c))

    # The optimizer's per-parameter work and the per-step bookkeeping do not happen
    # at inference; per-layer dispatch does.
    for per_step in ("params", "one"):
        dropped = only(per_step).lane_cost(lane, CTX)
        assert dropped.time > 0, per_step
        assert dropped.inference_time == 0, per_step
    assert only("layers").lane_cost(lane, CTX).inference_time > 0
    # A fit of FLOPs alone prices one image's forward FLOPs as it prices the step's.
    flops = only("train_flops").lane_cost(lane, CTX)
    assert flops.time == pytest.approx(1e-9 * flops.train_flops * calibration.speed)
    assert flops.inference_time == pytest.approx(1e-9 * flops.inference_flops * calibration.speed)


def test_step_timing_rejects_no_rounds_or_repeats() -> None:
    from nasmlcn.measure import StepTiming

    with pytest.raises(ValueError, match="got 0 and 5"):
        StepTiming(rounds=0)
    with pytest.raises(ValueError, match="got 2 and 0"):
        StepTiming(repeats=0)


# Seconds per unit of MODEL_TIME_FEATURES (train_flops, narrow_flops, params,
# feature_values, capsules, group_layers, groups, step), of the order measured here.
MODEL_TRUTH = (7e-12, 2e-12, 1e-8, 6e-9, 2.6e-7, 1e-3, 2e-3, 0.01)


def _with_models(count: int = 24) -> Calibration:
    from nasmlcn.costs import ModelSample, calibration_models, whole_model_features

    models = [
        ModelSample(lanes, _dot(MODEL_TRUTH, whole_model_features(lanes, CTX, "cpu")))
        for lanes in calibration_models(count, seed=3)
    ]
    return fit_calibration(
        synthetic_samples(), CTX, device="cpu", speed=0.15, threads=1, model_samples=models
    )


def test_whole_models_are_fitted_saved_and_predicted(tmp_path: Path) -> None:
    from nasmlcn.costs import MODEL_TIME_FEATURES, model_time_features
    from nasmlcn.specs import parse_lanes

    cal = _with_models()
    assert len(cal.model_samples) == 24
    assert len(cal.model_time_coefficients) == len(MODEL_TIME_FEATURES)
    for sample in cal.model_samples:  # the fit reproduces data that follow a linear model
        predicted = cal.model_local_seconds(sample.lanes, CTX, head_lanes=len(sample.lanes))
        assert predicted == pytest.approx(sample.seconds, rel=0.02)
    path = cal.save(tmp_path / "c.json")
    again = Calibration.load(path)
    assert again == cal
    # an older file without whole models still loads, and predicts lane sums
    data = json.loads(path.read_text())
    for key in ("model_time_features", "model_time_coefficients", "model_samples"):
        del data[key]
    old = Calibration.from_dict(data)
    assert old.model_time_coefficients == ()
    assert old.model_local_seconds(parse_lanes("2*mlcn2:1x1"), CTX) is None
    lanes = parse_lanes("6*mlcn2:1x1,mlcn1:2x1")
    old_model = CalibratedCostModel(old)
    assert old_model.lanes_time(lanes, CTX, "cpu") == pytest.approx(
        sum(old_model.lane_cost(lane, CTX).time for lane in lanes)
    )
    # with whole models: the device's lanes as they run there, in speed-1.0 seconds
    model = CalibratedCostModel(cal)
    want = _dot(cal.model_time_coefficients, model_time_features(lanes, CTX, "cpu")) * 0.15
    assert model.lanes_time(lanes, CTX, "cpu") == pytest.approx(want)
    assert model.lanes_time(lanes, CTX, "cpu") != pytest.approx(
        old_model.lanes_time(lanes, CTX, "cpu"), rel=0.01
    )
    # the head's time is the whole fit's head and per-step terms
    head = model.head_cost(len(lanes), CTX)
    assert head.time == pytest.approx(
        _dot(cal.model_time_coefficients, model_time_features([], CTX, "cpu", head_lanes=7)) * 0.15
    )
    data["model_samples"] = [{"lanes": "mlcn2:1x1", "seconds": 0.1, "second": 1}]
    with pytest.raises(CalibrationError, match="second"):
        Calibration.from_dict(data)


def test_a_plan_with_whole_models_predicts_each_device_as_its_lanes_run() -> None:
    from nasmlcn.hardware import parse_devices
    from nasmlcn.planning import plan_model

    model = CalibratedCostModel(_with_models())
    spec = MLCNSpec.from_lanes("8*mlcn2:1x1,2*mlcn1:2x2")
    plan = plan_model(spec, parse_devices("2xcpu"), cost_model=model)
    ctx = CostContext.of(spec)
    for device in plan.per_device:
        lanes = [spec.lanes[i] for i in device.lanes]
        assert device.load == pytest.approx(model.lanes_time(lanes, ctx, "cpu"))
        assert device.time == pytest.approx(device.load / device.device.speed)
    assert plan.makespan == max(d.time for d in plan.per_device)
    head = plan.costs.head.time / plan.devices[0].speed
    assert plan.step_time == pytest.approx(plan.makespan + head)
    # the analytic model's plan still sums its lane costs
    analytic = plan_model(spec, parse_devices("2xcpu"))
    for device in analytic.per_device:
        assert device.load == pytest.approx(sum(analytic.costs.lanes[i].time for i in device.lanes))


def test_a_whole_model_plan_compares_the_other_strategies_in_its_own_terms() -> None:
    from nasmlcn.hardware import parse_devices
    from nasmlcn.planning import plan_model

    model = CalibratedCostModel(_with_models())
    spec = MLCNSpec.from_lanes("8*mlcn2:1x1,2*mlcn1:2x2")
    devices = parse_devices("2xcpu")
    plan = plan_model(spec, devices, cost_model=model, compare=True)
    optimal = plan_model(spec, devices, cost_model=model, strategy="optimal")
    # the comparison's makespan is the plan's kind (whole-model), not the lane sums'
    assert plan.comparison["optimal"]["makespan"] == pytest.approx(optimal.makespan)
    assert optimal.makespan != pytest.approx(optimal.placement.makespan, rel=0.01)


def test_with_whole_models_a_lane_s_time_is_its_terms_of_the_whole_fit() -> None:
    """What placement balances and the search's buckets fill."""
    from nasmlcn.costs import model_time_features
    from nasmlcn.specs import parse_lane

    cal = _with_models()
    lane = parse_lane("mlcn2:2x3")
    got = CalibratedCostModel(cal).lane_cost(lane, CTX)
    want = _dot(cal.model_time_coefficients, model_time_features([lane], CTX, "cpu")) * 0.15
    assert got.time == pytest.approx(want)
    lane_only = CalibratedCostModel(replace(cal, model_time_coefficients=(), model_samples=()))
    assert lane_only.lane_cost(lane, CTX).time == pytest.approx(cal.local_seconds(lane, CTX) * 0.15)
    # inference time and memory stay the lane fit's
    assert got.inference_time == lane_only.lane_cost(lane, CTX).inference_time
    assert got.memory_bytes == lane_only.lane_cost(lane, CTX).memory_bytes
