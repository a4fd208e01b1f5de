"""``benchmarks/gpu_speed.py`` as a dry run on the CPU (both paths timed, the graphed
one eager and saying so, FLOP rates beside images/s, the profile's CPU figures; each
MLCN under both layer paths with ``--layer-path both``), its models (the speed goals'), the
profile reader's GPU figures on made-up events, and ``benchmarks/speed_summary.py`` on
a real small search."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.benchmarks._scripts import command, load_script, run_json
from tests.conftest import small_search

# runs the benchmark script: with the other quick paths in CI (pytest -m slow
# tests/benchmarks), not in the default run
pytestmark = pytest.mark.slow


def test_quick_dry_run_on_the_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("gpu_speed", tmp_path, monkeypatch)
    profiles = tmp_path / "profiles"
    data, err = run_json(
        script, capsys, "--quick", "--device", "cpu", "--profile-dir", str(profiles)
    )
    assert data["device"] == "cpu"
    assert data["batches"] == [2]
    assert data["rounds"] == 1
    assert "median of 1 interleaved round" in data["figures"]
    assert [m["model"] for m in data["models"]] == ["capsnet", "4*mlcn2:1x1", "2*mlcn2-ref:1x1"]
    assert [m["label"] for m in data["models"]] == ["capsnet", "4*mlcn2:1x1", "2*mlcn2-ref:1x1"]
    assert data["layer_path"] == "grouped"
    assert data["layer_paths"] == []  # nothing to set side by side
    for model in data["models"]:
        assert model["params"] > 0
        assert model["forward_gflop_per_image"] > 0
        [row] = model["batches"]
        assert row["batch"] == 2
        for path in ("eager", "graphed"):
            figures = row[path]
            assert figures["images_per_second"] > 0
            assert figures["rounds"] == len(figures["per_round"]) == 1
            assert figures["graphed"] is False  # no CUDA graphs off a GPU
            assert figures["capture_seconds"] == 0
        assert row["graphed_speedup"] == pytest.approx(
            row["graphed"]["images_per_second"] / row["eager"]["images_per_second"]
        )
        profile = model["profile"]
        assert profile["batch"] == 2
        for path in ("eager", "graphed"):
            figures = profile[path]
            assert figures["steps"] == 2
            assert figures["wall_ms_per_step"] > 0
            assert figures["optimizer_host_ms_per_step"] > 0
            assert figures["kernels_per_step"] is None  # no CUDA events
            assert figures["gpu_busy_ms_per_step"] is None
            assert figures["top_kernels"] is None
            assert figures["unprofiled_ms_per_step"] == pytest.approx(
                1e3 * 2 / row[path]["images_per_second"]
            )
            assert figures["gpu_busy_share_unprofiled"] is None
        file = profiles / profile["file"]
        assert 0 < file.stat().st_size < 20_000
    capsnet = data["models"][0]["batches"][0]
    assert capsnet["eager"]["ratio_to_capsnet"] == 1.0
    assert capsnet["graphed"]["ratio_to_capsnet"] == 1.0
    mlcn = data["models"][1]["batches"][0]
    assert mlcn["eager"]["ratio_to_capsnet"] == pytest.approx(
        mlcn["eager"]["images_per_second"] / capsnet["eager"]["images_per_second"]
    )
    assert sorted(p.name for p in profiles.iterdir()) == [
        "profile-2xmlcn2-ref-1x1.txt",
        "profile-4xmlcn2-1x1.txt",
        "profile-capsnet.txt",
    ]
    assert "round 1/1" in err
    _check_flop_rates(data)
    # the text table: the FLOP-rate ratio beside the images/s one, the mlcn2-ref model
    script.print_table(data)
    table = capsys.readouterr().out.splitlines()
    header = next(line for line in table if line.startswith("model "))
    assert header.endswith("graph x capture s kernels")
    assert "graphed img/s xCaps xFLOP" in header
    assert "eager img/s xCaps xFLOP" in header
    assert "fwd GFLOP" in header
    [ref] = [line for line in table if line.startswith("2*mlcn2-ref:1x1 ")]
    assert "0.025" in ref.split()  # forward GFLOP per image
    assert "(eager: no CUDA graphs here)" in ref


def test_both_layer_paths_dry_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--layer-path both``: each MLCN timed and profiled under each layer path (CapsNet
    once), the two side by side (their order alternating round by round), bmm's
    images/s over grouped's per path, and kernels per step (None off a GPU)."""
    script = load_script("gpu_speed", tmp_path, monkeypatch)
    lanes = "2*mlcn2-ref:1x1"
    args = ["--quick", "--device", "cpu", "--layer-path", "both", "--model", lanes]
    data, err = run_json(script, capsys, *args, "--profile-dir", str(tmp_path / "p"))
    assert data["layer_path"] == "both"
    assert set(data["tf32"]) == {"matmul", "cudnn"}
    models = {m["label"]: m for m in data["models"]}
    assert list(models) == ["capsnet", f"{lanes}@grouped", f"{lanes}@bmm"]
    assert [m["layer_path"] for m in models.values()] == [None, "grouped", "bmm"]
    grouped, bmm = models[f"{lanes}@grouped"], models[f"{lanes}@bmm"]
    assert grouped["model"] == bmm["model"] == lanes
    assert grouped["params"] == bmm["params"]
    assert grouped["forward_gflop_per_image"] == bmm["forward_gflop_per_image"] > 0
    [compared] = data["layer_paths"]
    assert compared["model"] == lanes
    assert compared["kernels_per_step"] == {"grouped": None, "bmm": None}  # no CUDA events
    [row] = compared["batches"]
    for path in ("eager", "graphed"):
        rate = bmm["batches"][0][path]["images_per_second"]
        assert row["bmm_over_grouped"][path] == pytest.approx(
            rate / grouped["batches"][0][path]["images_per_second"]
        )
        assert bmm["profile"][path]["steps"] == 2
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == [
        "profile-2xmlcn2-ref-1x1-bmm.txt",
        "profile-2xmlcn2-ref-1x1-grouped.txt",
        "profile-capsnet.txt",
    ]
    assert f"{lanes}@bmm eager" in err
    script.print_table(data)
    out = capsys.readouterr().out
    assert f"{lanes}@bmm " in out
    assert f"  {lanes} batch 2: eager " in out
    assert "kernels n/a -> n/a" in out
    # the order of a round: a model's layer paths side by side, reversed in odd rounds
    labels = ["capsnet", "a@grouped", "a@bmm", "b@grouped", "b@bmm"]
    assert script.round_order(labels, 0) == labels
    assert script.round_order(labels, 1) == ["capsnet", "a@bmm", "a@grouped", "b@bmm", "b@grouped"]


def _check_flop_rates(data: dict[str, Any]) -> None:
    """FLOP rate = images/s x forward GFLOP per image; its ratio to CapsNet's."""
    from nasmlcn.costs import get_cost_model
    from nasmlcn.specs import MLCNSpec

    capsnet = data["models"][0]
    assert capsnet["forward_gflop_per_image"] == pytest.approx(
        0.4064, rel=1e-3
    )  # CapsNet's forward GFLOP per image
    base = capsnet["batches"][0]
    for model in data["models"]:
        gflop = model["forward_gflop_per_image"]
        if model["model"] != "capsnet":
            # torch's count agrees with the analytic cost model's (its mlcn2 kernel fold
            # is once a pass, not per image: within 1 %)
            spec = MLCNSpec.from_lanes(model["model"])
            analytic = get_cost_model("analytic").model_cost(spec).forward_flops / 1e9
            assert 1.0 <= gflop / analytic <= 1.01
        [row] = model["batches"]
        for path in ("eager", "graphed"):
            figures = row[path]
            rate = figures["images_per_second"] * gflop
            assert figures["forward_gflop_per_second"] == pytest.approx(rate)
            assert figures["flop_rate_ratio_to_capsnet"] == pytest.approx(
                rate / base[path]["forward_gflop_per_second"]
            )
            assert figures["flop_rate_ratio_to_capsnet"] == pytest.approx(
                figures["ratio_to_capsnet"] * gflop / capsnet["forward_gflop_per_image"]
            )
    assert base["eager"]["flop_rate_ratio_to_capsnet"] == 1.0


def test_the_models_are_the_speed_goals_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = load_script("gpu_speed", tmp_path, monkeypatch)
    assert script.MODELS[0] == "capsnet"
    assert "26*mlcn1:1x2,22*mlcn2:1x4,8*mlcn1:3x4,2*mlcn2:2x4" in script.MODELS
    assert "8*mlcn2-ref:4x1" in script.MODELS
    assert set(script.SEEDED_MODELS.values()) <= set(script.MODELS)
    assert len(set(script.MODELS)) == len(script.MODELS) == 7
    # the reference code's lanes do 3.4x CapsNet's work per image (1.378 GFLOP, docs/hardware.md)
    ref = script.model_facts("8*mlcn2-ref:4x1")
    assert ref["forward_gflop_per_image"] == pytest.approx(1.378, abs=5e-4)
    # the seeded default-space models are what their seeds draw (the comment says how)
    from _space_models import default_space_specs

    for seed, lanes in script.SEEDED_MODELS.items():
        [spec] = default_space_specs(1, seed, devices="8xK80", mem="12GB")
        assert spec.describe() == lanes, f"seed {seed}: the default space draws otherwise now"


def _event(name: str, device: str, start: float, end: float, **more: Any) -> Any:
    from torch.autograd import DeviceType
    from torch.autograd.profiler_util import Interval

    kind = DeviceType.CUDA if device == "cuda" else DeviceType.CPU
    fields = {"thread": 1, "kernels": [], **more}
    return SimpleNamespace(name=name, device_type=kind, time_range=Interval(start, end), **fields)


def test_profile_figures_from_cuda_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from torch.autograd.profiler_util import Kernel

    profile = load_script("_gpu_profile", tmp_path, monkeypatch)
    events = [
        _event("aten::mm", "cpu", 0, 10, kernels=[Kernel("gemm", 0, 40.0)]),
        _event("cudaLaunchKernel", "cpu", 2, 4),
        _event("Optimizer.step#Adam.step", "cpu", 100, 200),
        _event("aten::_fused_adam_", "cpu", 110, 190, kernels=[Kernel("adam", 0, 10.0)]),
        _event("cudaLaunchKernel", "cpu", 120, 125),
        # a backward op of another thread in the same window: not the optimizer's
        _event("aten::mm", "cpu", 150, 160, thread=2, kernels=[Kernel("gemm", 0, 40.0)]),
        _event("gemm", "cuda", 10, 50),
        _event("gemm", "cuda", 150, 190),
        _event("adam", "cuda", 200, 210),
        _event("Memcpy HtoD (Pageable -> Device)", "cuda", 210, 220),
    ]
    f = profile.summarise(events, steps=2, wall=0.001, cuda=True)
    assert f["launches_per_step"] == 1
    assert f["kernels_per_step"] == 1.5  # the copy is busy time, not a kernel
    assert f["gpu_busy_ms_per_step"] == pytest.approx(0.1 / 2)
    assert f["gpu_busy_share"] == pytest.approx(0.1 / 1)
    assert f["optimizer_host_ms_per_step"] == pytest.approx(0.1 / 2)
    assert f["optimizer_kernels_per_step"] == 0.5
    assert f["optimizer_gpu_ms_per_step"] == pytest.approx(0.01 / 2)
    assert f["optimizer_gpu_share"] == pytest.approx(0.1)
    assert [(k["name"], k["count_per_step"]) for k in f["top_kernels"]] == [
        ("gemm", 1.0),
        ("adam", 0.5),
    ]
    assert f["top_kernels"][0]["share_of_busy"] == pytest.approx(0.8)
    cpu = profile.summarise(events, steps=2, wall=0.001, cuda=False)
    assert cpu["kernels_per_step"] is None
    assert cpu["optimizer_host_ms_per_step"] == f["optimizer_host_ms_per_step"]
    assert "gemm" in "\n".join(profile.describe("eager", f))


def test_speed_summary_reads_trials_per_hour_and_rates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = small_search(tmp_path, epochs=1, train_limit=100, trials=3)
    db = tmp_path / "s.db"
    assert config.storage == f"sqlite:///{db}"
    script = load_script("speed_summary", tmp_path, monkeypatch)
    data, _ = run_json(script, capsys, "--first", "2", str(db), str(tmp_path / "none.db"))
    summary = data[str(db)]
    assert summary["study"] == "s"
    assert summary["workers"] == 1
    first, every = summary["first"], summary["all"]
    assert first["numbers"] == [0, 1]
    assert every["trials"] == summary["states"]["COMPLETE"] >= 2
    for figures in (first, every):
        assert figures["wall_seconds"] > 0
        assert figures["trials_per_hour"] == pytest.approx(
            3600 * figures["trials"] / figures["wall_seconds"]
        )
        assert figures["median_images_per_second"] > 0
    assert "StorageError" in data[str(tmp_path / "none.db")]["error"]
    assert script.main(["--first", "2", str(db)]) == 0
    out = capsys.readouterr().out
    assert "first 2" in out
    assert "packing" not in out  # one job: nothing to set beside it
    # several jobs (the same one twice here, a file and its URL; and a missing one):
    # each one's wall time and trials per hour side by side, over the first job's
    args = ["--first", "2", str(db), config.storage, str(tmp_path / "none.db")]
    assert script.main(args) == 0
    out = capsys.readouterr().out
    table = out[out.index("packing") :].splitlines()
    assert "trials/h" in table[1]
    assert "x first" in table[1]
    rows = [line.split() for line in table[2:]]
    assert [r[0] for r in rows] == ["s.db", "s.db", "none.db"]
    done, unfinished = every["trials"], sum(summary["states"].values()) - every["trials"]
    wall, rate = f"{every['wall_seconds']:.1f}", f"{every['trials_per_hour']:.0f}"
    for row in rows[:2]:
        assert row[1:] == ["1", str(done), str(unfinished), wall, rate, "1.00"]
    assert rows[2][1] == "StorageError:"


def test_a_sigterm_reports_the_rounds_measured_so_far(tmp_path: Path) -> None:
    """``timeout`` at a step's limit: the figures measured until then come out as JSON
    (the GPU check's one call is not lost to a slow model)."""
    import signal
    import subprocess

    args = ["--device", "cpu", "--batch", "2", "--rounds", "60", "--seconds", "0.05"]
    args += ["--model", "4*mlcn2:1x1", "--profile-steps", "0", "--json"]
    proc = subprocess.Popen(
        [*command("gpu_speed"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NASMLCN_DATA_DIR": str(tmp_path)},
    )
    assert proc.stderr is not None
    for line in proc.stderr:  # a whole round timed, then the signal
        if "round 2/60" in line:
            break
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 1
    data = json.loads(out)
    assert data["stopped"].startswith("stopped by SIGTERM")
    for model in data["models"]:
        [row] = model["batches"]
        for path in ("eager", "graphed"):
            assert 1 <= row[path]["rounds"] < 60
            assert row[path]["images_per_second"] > 0
