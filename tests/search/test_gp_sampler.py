"""``--sampler gp``: Optuna's GPSampler runs real searches (proxy evaluator, SQLite):
one objective, and several with a latency budget whose constraint it models."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from nasmlcn.search import SearchConfig, run_search
from nasmlcn.study import load_existing_study, study_info


def _config(tmp_path: Path, **kw: object) -> SearchConfig:
    base: dict[str, object] = {
        "evaluator": "proxy",
        "sampler": "gp",
        "storage": f"sqlite:///{tmp_path / 'gp.db'}",
        "trials": 5,
        "epochs": 3,
        "devices": "2xcpu",
        "prune": False,
    }
    base.update(kw)
    return SearchConfig(**base)  # type: ignore[arg-type]


def _study(config: SearchConfig, name: str) -> optuna.Study:
    return load_existing_study(name, config.storage)


def test_one_objective(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    modelled: list[int] = []
    real = optuna.samplers.GPSampler.sample_relative

    def spy(self, study, trial, search_space):  # type: ignore[no-untyped-def]
        params = real(self, study, trial, search_space)
        if params:  # past the random start: the GP proposed these
            modelled.append(trial.number)
        return params

    monkeypatch.setattr(optuna.samplers.GPSampler, "sample_relative", spy)
    config = _config(tmp_path)
    result = run_search(config)
    assert result.completed - result.trial_counts["repeats"] == 5  # models
    assert study_info(_study(config, result.study))["config"]["sampler"] == "gp"
    assert modelled  # the GP proposed trials (after n_startup_trials = 2 random ones)
    assert min(modelled) >= 2


def test_several_objectives_with_a_latency_budget(tmp_path: Path) -> None:
    free = run_search(_config(tmp_path, trials=3, objectives=("accuracy", "latency")))
    latencies = sorted(t["predicted"]["latency"] for t in free.best)
    # a budget between the cheapest and the dearest of the first trials
    budget = latencies[0] + 0.5 * (latencies[-1] - latencies[0]) if len(latencies) > 1 else 1.0
    config = _config(
        tmp_path, objectives=("accuracy", "latency"), latency_budget=budget, study="budget"
    )
    result = run_search(config)
    assert result.completed - result.trial_counts["repeats"] == 5  # models
    trials = _study(config, "budget").get_trials(deepcopy=False)
    # every trial carries the constraint the sampler models (<= 0: within the budget)
    assert all("constraints:latency" in t.system_attrs for t in trials)
    for t in trials:
        within = t.system_attrs["constraints:latency"] <= 0
        assert within == (t.user_attrs["predicted"]["latency"] <= budget + 1e-12)
    for best in result.best:  # the front holds only trials within the budget
        assert best["predicted"]["latency"] <= budget + 1e-12


@pytest.mark.parametrize("objectives", [("accuracy",), ("accuracy", "latency", "memory")])
def test_the_sampler_is_a_gp_whatever_the_objectives(tmp_path: Path, objectives: tuple) -> None:
    config = _config(tmp_path, trials=4, objectives=objectives)
    result = run_search(config)
    assert result.completed - result.trial_counts["repeats"] == 4  # models
