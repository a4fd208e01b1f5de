"""The end-to-end claim: does a searched MLCN beat the thesis's hand-designed
ones at the same predicted latency on the same devices?

Runs the two recipes in ``studies/`` and retrains both sides the same way:

1. ``studies/table41-hand.toml``: thesis Table 4.1's ``2*mlcn2:4x1`` and
   ``8*mlcn2:4x1`` on 8 K80s of 12 GB (queued, so each is trained once at the
   search's fidelity);
2. ``studies/search-vs-hand.toml``: a GP search on the same devices whose
   ``latency_budget`` is the hand models' predicted latency (checked here against
   their stored plans before the search starts);
3. ``nasmlcn retrain`` (:func:`nasmlcn.search.retrain_study`) of the search's top
   ``--top`` trials and of both hand models, for every seed of ``--seeds``: the
   same epochs, the whole training split, the same training settings and code.

Prints the table (test accuracy per seed, mean, predicted latency, parameters),
the goal (best searched model's mean test accuracy >= best hand model's + 0.5
point), the paired difference with its t interval over the seeds, and the whole
run's compute (wall and CPU seconds of every search trial and every retraining on
this machine). Writes ``search_vs_hand.html``/``.png``: best validation accuracy
so far per search trial (thesis Fig. 6.5's style) beside the hand models'.

Everything is kept in ``--out`` (one SQLite file, the run folders): running the
same command again continues where it stopped (the searches reach their trial
counts; retrained models already stored are not trained again).

    python benchmarks/search_vs_hand.py                      # reduced scale, 1.3 h here
    python benchmarks/search_vs_hand.py --quick              # minutes: the whole path
    python benchmarks/search_vs_hand.py --scale full --device cuda   # thesis scale, a GPU

Full scale: 10 epochs per trial on the whole training split, 60 trials, retrain 20
epochs (thesis Table 4.1) with 3 seeds; about 2 GPU-hours on an H200 (6.2 s per
epoch of ``8*mlcn2:4x1`` there, scripts/gpu_check.sh).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _plots import write_plot
from _search_vs_hand_figure import figure

from nasmlcn.reproduce.engines.common import percent, running_best

if TYPE_CHECKING:
    import optuna

ROOT = Path(__file__).resolve().parent.parent
SEARCH_RECIPE = ROOT / "studies" / "search-vs-hand.toml"
HAND_RECIPE = ROOT / "studies" / "table41-hand.toml"
HAND_MODELS = ("mlcn2-2x4", "mlcn2-8x4")
GOAL_POINTS = 0.005
"""The issue's margin: the searched model's test accuracy >= the best hand one's + 0.5 pt."""


@dataclass(frozen=True)
class Scale:
    """How big a run is: the search's fidelity and the retraining's."""

    name: str
    trials: int | None  # None: the recipe's
    search_epochs: int | None
    train_limit: int | None  # search trials' training images (None: the recipe's)
    val_limit: int | None
    retrain_epochs: int
    retrain_train_limit: int | None  # None: the whole training split
    test_limit: int | None
    seeds: tuple[int, ...]
    top: int


SCALES = {
    "quick": Scale("quick", 3, 1, 1000, 300, 1, 1000, 300, (0, 1), 2),
    "reduced": Scale("reduced", None, None, None, None, 3, None, None, (0, 1, 2), 3),
    "full": Scale("full", 60, 10, 54_000, 6_000, 20, None, None, (0, 1, 2), 3),
}


# -- the searches --------------------------------------------------------------------


def recipe_config(path: Path, scale: Scale, storage: str, device: str | None) -> Any:
    """The recipe's :class:`~nasmlcn.search.SearchConfig`, at ``scale``."""
    from nasmlcn.search import SearchConfig, load_search_recipe

    options, _, _ = load_search_recipe(path)
    config = SearchConfig(**options)
    return config.with_overrides(
        storage=storage,
        trials=scale.trials if path == SEARCH_RECIPE else None,
        epochs=scale.search_epochs,
        train_limit=scale.train_limit,
        val_limit=scale.val_limit,
        run_on=device,
    )


def _queue_hand_models() -> Any:
    """An observer that queues the hand models in a new study (each trained once)."""
    from nasmlcn.search import SearchObserver

    class Queue(SearchObserver):
        def on_study(self, study: optuna.Study) -> None:
            if not study.trials:
                for model in HAND_MODELS:
                    study.enqueue_trial({"model": model})

    return Queue()


class Progress:
    """One line per finished trial on stderr (the search's own display is the CLI's)."""

    def __init__(self, label: str, target: int) -> None:
        from nasmlcn.search import SearchObserver

        outer = self

        class _Observer(SearchObserver):
            def on_trial_end(self, outcome: Any) -> None:
                outer.done += 1
                value = f"{outcome.values[0]:.4f}" if outcome.values else outcome.state
                print(
                    f"  [{label} {outer.done}/{target}] trial {outcome.number} {value} "
                    f"{outcome.seconds:5.1f} s  {outcome.lanes}",
                    file=sys.stderr,
                    flush=True,
                )

        self.done = 0
        self.observer = _Observer()


def run_searches(
    scale: Scale, storage: str, device: str | None
) -> tuple[Any, Any, dict[str, float]]:
    """Both searches (continued where they stopped); their configs and compute."""
    from nasmlcn.search import run_search

    hand = recipe_config(HAND_RECIPE, scale, storage, device).with_overrides(
        trials=len(HAND_MODELS)
    )
    search = recipe_config(SEARCH_RECIPE, scale, storage, device)
    compute = {"wall_seconds": 0.0, "cpu_seconds": 0.0}
    for config, observers in (
        (hand, [_queue_hand_models(), Progress("hand", hand.trials).observer]),
        (search, [Progress("search", search.trials).observer]),
    ):
        wall, cpu = time.perf_counter(), time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run_search(config, observers=observers)
        compute["wall_seconds"] += time.perf_counter() - wall
        compute["cpu_seconds"] += time.process_time() - cpu
        if result.stopped == "interrupted":
            raise KeyboardInterrupt
        if config is hand:
            check_budget(config, search)
    return hand, search, compute


def _completed(config: Any) -> list[Any]:
    from nasmlcn.study import load_existing_study

    study = load_existing_study(config.study, config.storage)
    return [t for t in study.trials if t.state.name == "COMPLETE" and t.values]


def _latency(trial: Any) -> float:
    return float(trial.user_attrs["predicted"]["latency"])


def check_budget(hand: Any, search: Any) -> None:
    """The search recipe's latency budget is the hand models' predicted latency (the
    claim compares at equal or lower latency): refuse to run otherwise."""
    latencies = {t.params["model"]: _latency(t) for t in _completed(hand)}
    if set(latencies) != set(HAND_MODELS):
        raise SystemExit(f"error: the hand study holds {sorted(latencies)}, not {HAND_MODELS}")
    lowest = min(latencies.values())
    if search.latency_budget is None or not lowest <= search.latency_budget <= lowest * 1.001:
        raise SystemExit(
            f"error: {SEARCH_RECIPE.name}'s latency_budget {search.latency_budget} is not the "
            f"hand models' predicted latency {lowest:.7f} s"
        )


# -- retraining ----------------------------------------------------------------------


def retrain_all(
    hand: Any, search: Any, scale: Scale, out: Path, device: str
) -> tuple[dict[str, dict[int, list[Any]]], dict[str, float]]:
    """Every (study, seed) retrained; by study, per trial, its models (one per seed)."""
    from nasmlcn.search import RetrainOptions, retrain_study
    from nasmlcn.study import load_existing_study, retrained_models, study_info

    compute = {"wall_seconds": 0.0, "cpu_seconds": 0.0}
    models: dict[str, dict[int, list[Any]]] = {}
    for config, top in ((hand, len(HAND_MODELS)), (search, scale.top)):
        numbers = [t.number for t in selected(config, top)]
        for seed in scale.seeds:
            stored = _stored(config, seed, scale.retrain_epochs)
            if set(numbers) <= stored:
                continue  # done in an earlier run
            options = RetrainOptions(
                top=top,
                epochs=scale.retrain_epochs,
                train_limit=scale.retrain_train_limit,
                test_limit=scale.test_limit,
                device=device,
                out_dir=str(out / "runs" / config.study),
                resume=True,
                seed=seed,
            )
            print(f"  [retrain] {config.study}, seed {seed}: {top} models", file=sys.stderr)
            wall, cpu = time.perf_counter(), time.process_time()
            retrain_study(config.study, config.storage, options)
            compute["wall_seconds"] += time.perf_counter() - wall
            compute["cpu_seconds"] += time.process_time() - cpu
        info = study_info(load_existing_study(config.study, config.storage))
        per_trial: dict[int, list[Any]] = {n: [] for n in numbers}
        for m in retrained_models(info):
            if m.number in per_trial and m.seed in scale.seeds and m.epochs == scale.retrain_epochs:
                per_trial[m.number].append(m)
        models[config.study] = per_trial
    return models, compute


def trial_seconds(config: Any) -> float:
    """Wall seconds of every finished trial of the study (earlier runs' too)."""
    from nasmlcn.study import load_existing_study

    study = load_existing_study(config.study, config.storage)
    return sum(
        (t.datetime_complete - t.datetime_start).total_seconds()
        for t in study.trials
        if t.datetime_complete is not None and t.datetime_start is not None
    )


def _stored(config: Any, seed: int, epochs: int) -> set[int]:
    from nasmlcn.study import load_existing_study, retrained_models, study_info

    info = study_info(load_existing_study(config.study, config.storage))
    return {m.number for m in retrained_models(info) if m.seed == seed and m.epochs == epochs}


def selected(config: Any, top: int) -> list[Any]:
    """The trials ``retrain --top`` takes: the ``top`` most accurate feasible ones,
    each a different model."""
    # the retrain's own selection, so the check of what is stored matches it
    from nasmlcn.search._results.retrain_plan import select_trials
    from nasmlcn.study import load_existing_study

    study = load_existing_study(config.study, config.storage)
    return select_trials(study, pareto=False, top=top)


# -- the report ----------------------------------------------------------------------


def best_so_far(trials: Sequence[Any]) -> list[float | None]:
    """Best feasible validation accuracy after each trial, in trial order."""
    from nasmlcn.search import is_feasible

    ordered = sorted(trials, key=lambda t: t.number)
    return running_best([t.values[0] if is_feasible(t) else None for t in ordered])


def summarize_models(
    side: str, config: Any, per_trial: Mapping[int, list[Any]], seeds: Sequence[int]
) -> list[dict[str, Any]]:
    trials = {t.number: t for t in _completed(config)}
    rows = []
    for number, models in per_trial.items():
        by_seed = {m.seed: m.test_accuracy for m in models}
        accs = [by_seed[s] for s in seeds if s in by_seed]
        # the retraining's validation accuracy at its selected epoch: what picks a side's
        # best model (the test set picks nothing)
        vals = [max(m.val_accuracy_per_epoch) for m in models if m.seed in seeds]
        trial = trials[number]
        rows.append(
            {
                "side": side,
                "trial": number,
                "name": trial.params.get("model", f"trial {number}"),
                "lanes": models[0].lanes if models else trial.user_attrs.get("lanes", ""),
                "latency_s": _latency(trial),
                "params": models[0].params if models else None,
                "search_val_accuracy": trial.values[0],
                "test_accuracy": {str(s): by_seed.get(s) for s in seeds},
                "mean_test_accuracy": sum(accs) / len(accs) if accs else None,
                "mean_val_accuracy": sum(vals) / len(vals) if vals else None,
                "seeds_done": len(accs),
                "retrain_seconds": sum(m.seconds for m in models),
            }
        )
    return rows


def goal(rows: Sequence[Mapping[str, Any]], seeds: Sequence[int]) -> dict[str, Any]:
    """Best searched vs best hand model, each side's best chosen by its mean validation
    accuracy over the seeds (the test set picks nothing), compared on test accuracy."""
    from nasmlcn.stats import paired_interval

    def best(side: str) -> Mapping[str, Any] | None:
        done = [r for r in rows if r["side"] == side and r["seeds_done"] == len(seeds)]
        return max(done, key=lambda r: r["mean_val_accuracy"]) if done else None

    searched, hand = best("search"), best("hand")
    if searched is None or hand is None:
        return {"complete": False}
    a = [searched["test_accuracy"][str(s)] for s in seeds]
    b = [hand["test_accuracy"][str(s)] for s in seeds]
    out: dict[str, Any] = {
        "complete": True,
        "searched": searched["lanes"],
        "hand": hand["lanes"],
        "difference": sum(a) / len(a) - sum(b) / len(b),
        "latency_ratio": searched["latency_s"] / hand["latency_s"],
    }
    out["met"] = bool(out["difference"] >= GOAL_POINTS and out["latency_ratio"] <= 1.0 + 1e-9)
    if len(seeds) >= 2:
        iv = paired_interval(a, b)
        out["interval"] = {"low": iv.low, "high": iv.high, "pairs": iv.pairs, "verdict": iv.verdict}
    return out


def render(report: Mapping[str, Any]) -> str:
    seeds = report["seeds"]
    lines = [
        f"search vs hand-designed, 8xK80 12 GB, scale {report['scale']}: search "
        f"{report['search_trials']} trials x {report['search_epochs']} epoch(s) on "
        f"{report['search_train_images']} images; retrain {report['retrain_epochs']} epochs on "
        f"{report['retrain_train_images']} images, seeds {', '.join(map(str, seeds))}",
        "",
        "| model | lanes | pred. latency (ms) | params | search val. acc | "
        + " | ".join(f"test acc seed {s} (%)" for s in seeds)
        + " | mean (%) |",
        "|---|---|---|---|---|" + "---|" * len(seeds) + "---|",
    ]
    for row in report["models"]:
        name = f"hand {row['name']}" if row["side"] == "hand" else f"searched #{row['trial']}"
        params = "-" if row["params"] is None else f"{row['params']:,}"
        lines.append(
            f"| {name} | `{row['lanes']}` | {1000 * row['latency_s']:.4f} | {params} | "
            f"{row['search_val_accuracy']:.4f} | "
            + " | ".join(percent(row["test_accuracy"][str(s)]) for s in seeds)
            + f" | {percent(row['mean_test_accuracy'])} |"
        )
    g = report["goal"]
    lines.append("")
    if not g["complete"]:
        lines.append("goal: not every model is retrained yet (run the command again)")
    else:
        iv = g.get("interval")
        spread = (
            f", 95 % t over {iv['pairs']} paired seeds [{100 * iv['low']:+.2f}, "
            f"{100 * iv['high']:+.2f}] pt: {iv['verdict']}"
            if iv
            else ""
        )
        lines.append(
            f"goal (searched >= best hand + {100 * GOAL_POINTS:.1f} pt at <= its latency): "
            f"{'MET' if g['met'] else 'not met'} - `{g['searched']}` vs `{g['hand']}`: "
            f"{100 * g['difference']:+.2f} pt{spread}; latency ratio {g['latency_ratio']:.3f}"
        )
    c = report["compute"]
    total = c["search_trial_seconds"] + c["retrain_seconds"]
    lines.append(
        f"compute on this machine ({c['cores']} cores), every run of this --out: search trials "
        f"{c['search_trial_seconds']:.0f} s, retraining {c['retrain_seconds']:.0f} s, in all "
        f"{total / 3600:.2f} h wall; this run: searches {c['search']['wall_seconds']:.0f} s "
        f"wall / {c['search']['cpu_seconds']:.0f} CPU s, retraining "
        f"{c['retrain']['wall_seconds']:.0f} s / {c['retrain']['cpu_seconds']:.0f} CPU s"
    )
    return "\n".join(lines)


# -- main ----------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="reduced")
    parser.add_argument("--quick", action="store_true", help="--scale quick (minutes)")
    parser.add_argument("--out", type=Path, default=Path("runs/search-vs-hand"))
    parser.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N [default: cpu]")
    parser.add_argument("--seeds", help="retraining seeds, e.g. 0,1 [default: the scale's]")
    parser.add_argument("--plot-dir", type=Path, help="where the plot goes [default: --out]")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    import os

    args = parse_args(argv)
    scale = SCALES["quick" if args.quick else args.scale]
    if args.seeds:
        try:
            seeds = tuple(int(s) for s in args.seeds.split(","))
        except ValueError:
            print(f"error: --seeds {args.seeds!r}: give integers, e.g. 0,1", file=sys.stderr)
            return 2
        scale = Scale(**{**scale.__dict__, "seeds": seeds})
    args.out.mkdir(parents=True, exist_ok=True)
    storage = f"sqlite:///{(args.out / 'studies.db').resolve()}"
    run_on = None if args.device == "cpu" else args.device
    hand, search, search_compute = run_searches(scale, storage, run_on)
    models, retrain_compute = retrain_all(hand, search, scale, args.out, args.device)
    rows = [
        *summarize_models("hand", hand, models[hand.study], scale.seeds),
        *summarize_models("search", search, models[search.study], scale.seeds),
    ]
    curve = best_so_far(_completed(search))
    hand_rows = [r for r in rows if r["side"] == "hand"]
    report = {
        "scale": scale.name,
        "seeds": list(scale.seeds),
        "search_trials": search.trials,
        "search_epochs": search.epochs,
        "search_train_images": search.train_limit or "all",
        "retrain_epochs": scale.retrain_epochs,
        "retrain_train_images": scale.retrain_train_limit or "the whole training split",
        "latency_budget_s": search.latency_budget,
        "models": rows,
        "goal": goal(rows, scale.seeds),
        "best_so_far": curve,
        "compute": {
            "cores": os.cpu_count(),
            "search": search_compute,
            "retrain": retrain_compute,
            "search_trial_seconds": trial_seconds(hand) + trial_seconds(search),
            "retrain_seconds": sum(r["retrain_seconds"] for r in rows),
        },
        "commands": {
            "search": f"nasmlcn search --config {SEARCH_RECIPE.relative_to(ROOT)}",
            "hand": f"nasmlcn search --config {HAND_RECIPE.relative_to(ROOT)}",
            "retrain": "nasmlcn retrain --study search-vs-hand --top 3 --epochs E --seed S",
        },
    }
    title = f"GP search on 8xK80 at the hand models' latency ({scale.name} scale)"
    report["plots"] = [
        str(p)
        for p in write_plot(
            figure(_completed(search), hand_rows, title),
            args.plot_dir or args.out,
            "search_vs_hand",
        )
    ]
    (args.out / "report.json").write_text(json.dumps(report, indent=1))
    if args.json:
        print(json.dumps(report))
    else:
        print(render(report))
    return 0


if __name__ == "__main__":
    from nasmlcn.reproduce.engines.common import exit_with

    exit_with(main())
