"""``benchmarks/gpu_speed.py`` as a dry run on the CPU (both paths timed, the graphed
one eager and saying so, the profile's CPU figures), the profile reader's GPU figures
on made-up events, and ``benchmarks/speed_summary.py`` on a real small search."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.benchmarks._scripts import load_script, run_json
from tests.conftest import small_search


def test_quick_dry_run_on_the_cpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    script = load_script("gpu_speed", tmp_path, monkeypatch)
    profiles = tmp_path / "profiles"
    data, err = run_json(
        script, capsys, "--quick", "--device", "cpu", "--profile-dir", str(profiles)
    )
    assert data["device"] == "cpu"
    assert data["batches"] == [10]
    assert data["rounds"] == 1
    assert "median of 1 interleaved round" in data["figures"]
    assert [m["model"] for m in data["models"]] == ["capsnet", "4*mlcn2:1x1"]
    for model in data["models"]:
        assert model["params"] > 0
        [row] = model["batches"]
        assert row["batch"] == 10
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
        assert profile["batch"] == 10
        for path in ("eager", "graphed"):
            figures = profile[path]
            assert figures["steps"] == 2
            assert figures["wall_ms_per_step"] > 0
            assert figures["optimizer_host_ms_per_step"] > 0
            assert figures["kernels_per_step"] is None  # no CUDA events
            assert figures["gpu_busy_ms_per_step"] is None
            assert figures["top_kernels"] is None
            assert figures["unprofiled_ms_per_step"] == pytest.approx(
                1e3 * 10 / row[path]["images_per_second"]
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
        "profile-4xmlcn2-1x1.txt",
        "profile-capsnet.txt",
    ]
    assert "round 1/1" in err


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
    assert "first 2" in capsys.readouterr().out
