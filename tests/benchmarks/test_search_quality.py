"""``benchmarks/search_quality.py --quick``: every run, sane curves, its files and its cache."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks._scripts import run_script

RUNS = {
    "accuracy/random/mlcn-thesis",
    "accuracy/random/mlcn-buckets",
    "accuracy/tpe/mlcn-buckets",
    "accuracy/gp/mlcn-buckets",
    "accuracy/nsga2/mlcn-buckets",
    "accuracy+latency/random/mlcn-thesis",
    "accuracy+latency/random/mlcn-buckets",
    "accuracy+latency/tpe/mlcn-buckets",
    "accuracy+latency/gp/mlcn-buckets",
    "accuracy+latency/nsga2/mlcn-buckets",
    "accuracy/tpe/mlcn-buckets/long",
    "accuracy/tpe/mlcn-buckets/long+halving",
}
HALVING = "accuracy/tpe/mlcn-buckets/long+halving"


def run_quick(out: Path, cache: Path, data_dir: Path) -> dict[str, Any]:
    args = ["--quick", "--json", "--out", str(out), "--cache", str(cache)]
    proc = run_script("search_quality", args, data_dir)
    assert "estimate:" in proc.stderr
    assert "[accuracy/tpe/mlcn-buckets, seed 1] trial 6/6: accuracy" in proc.stderr
    return json.loads(proc.stdout)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # two runs of the script, each bounded by run_script (900 s)
def test_quick_run_reports_every_run_and_reuses_its_cache(data_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache.json"
    first = run_quick(tmp_path / "out", cache, data_dir)

    settings = first["settings"]
    seeds, trials = settings["seeds"], settings["trials"]
    assert len(seeds) == 2
    assert trials == 6
    assert settings["epochs"] == 1
    assert settings["long_epochs"] == 2
    assert set(first["runs"]) == RUNS
    for key, run in first["runs"].items():
        assert sorted(run["seeds"]) == sorted(str(s) for s in seeds), key
        n = run["trials"]
        assert n == (2 * trials if key == HALVING else trials)
        for seed, result in run["seeds"].items():
            states = [t["state"] for t in result["trials"]]
            numbers = [t["number"] for t in result["trials"]]
            assert numbers == list(range(len(numbers))), (key, seed)
            # --trials counts models: a repeat (nothing trained) comes on top
            assert sum(t["repeat_of"] is None for t in result["trials"]) == n, (key, seed)
            if key == HALVING:  # successive halving: pruned at the rung, or complete
                assert set(states) <= {"COMPLETE", "PRUNED"}, (key, seed, states)
                assert result["pruned"] == states.count("PRUNED")
            else:
                assert set(states) == {"COMPLETE"}, (key, seed, states)
            # every training's compute is counted, served by the cache or not; a
            # repeat (its model trained already) took its original's result: none
            trained = [t for t in result["trials"] if t["repeat_of"] is None]
            assert all(t["compute"] > 0 for t in trained), (key, seed)
            assert all(t["compute"] == 0 for t in result["trials"] if t not in trained)
        for curve in run["curves"]["best_accuracy"]:
            assert len(curve) == n
            present = [v for v in curve if v is not None]
            assert all(0.0 < v <= 1.0 for v in present)
            assert all(b >= a for a, b in itertools.pairwise(present)), (key, curve)
        if "latency" in run["objectives"]:
            for curve in run["curves"]["hypervolume"]:
                assert len(curve) == trials
                assert all(0.0 <= v <= 1.0 for v in curve)
                assert all(b >= a for a, b in itertools.pairwise(curve)), (key, curve)
                assert curve[-1] > 0.0  # some model beats chance below the reference latency
        else:
            assert "hypervolume" not in run["curves"]

    # The best-so-far figure after the last trial is the best of that seed's trials.
    baseline = first["runs"]["accuracy/random/mlcn-thesis"]
    best = [max(t["accuracy"] for t in s["trials"]) for s in baseline["seeds"].values()]
    assert baseline["at"][str(trials)]["best_accuracy"]["values"] == best
    goals = first["goals"]
    for name in ("reaches_within_goal_trials", "ahead_at_trials", "hypervolume_ahead"):
        assert isinstance(goals[name]["holds"], bool), name
    assert goals["best_sampler"] in ("tpe", "gp", "nsga2")
    for sampler in ("tpe", "gp", "nsga2"):
        paired = goals["accuracy"][sampler]["vs_baseline"]
        assert paired["pairs"] == len(seeds)
        assert paired["low"] <= paired["mean"] <= paired["high"]
        assert paired["verdict"] in ("ahead", "behind", "tie")
    mf = goals["multi_fidelity"]
    assert mf["full_compute"] > 0
    assert set(mf["budgets"]) == {"0.25", "0.5", "0.75", "1"}
    assert len(mf["halving_pruned_per_seed"]) == len(seeds)

    reference = first["reference_point"]
    assert reference["accuracy"] == pytest.approx(0.1)  # chance on ten classes
    assert 0 < reference["max_latency_seen"] <= reference["latency_bound"] < reference["latency"]

    for name in ("search_quality.html", "search_quality.png"):
        path = tmp_path / "out" / name
        assert str(path) in first["files"]
        assert path.stat().st_size > 10_000

    # Random sampling in the thesis space proposes the same models whatever the
    # objectives, so its accuracy+latency run is served by the cache within the first
    # invocation. (Not the buckets space: with a latency objective it also searches how
    # full the buckets are, where accuracy alone fills every bucket.)
    counts = first["cache"]
    # --trials counts models: each is evaluated once; a repeat (on top) took its
    # original's result, and the evaluator never saw it
    expected = sum(r["trials"] for r in first["runs"].values()) * len(seeds)
    assert counts["trials_evaluated"] == expected
    assert counts["trials_served"] + counts["trained"] == counts["trials_evaluated"]
    thesis = first["runs"]["accuracy+latency/random/mlcn-thesis"]["seeds"].values()
    assert all(s["served_by_cache"] == trials for s in thesis)
    # NSGA-II's first generation is random sampling: served by the random run's cache
    nsga2 = first["runs"]["accuracy+latency/nsga2/mlcn-buckets"]["seeds"].values()
    assert all(s["served_by_cache"] == trials for s in nsga2)
    assert counts["entries"] == counts["trained"]
    assert json.loads(cache.read_text())["schema_version"] == 2

    # A second invocation with the same cache trains nothing and reports the same figures.
    second = run_quick(tmp_path / "out2", cache, data_dir)
    assert second["cache"]["trained"] == 0
    assert second["cache"]["trials_served"] == counts["trials_evaluated"]
    assert second["estimate"]["trainings"] == dict.fromkeys(RUNS, 0)  # the dry run knew
    for key in RUNS:
        assert second["runs"][key]["curves"] == first["runs"][key]["curves"]
