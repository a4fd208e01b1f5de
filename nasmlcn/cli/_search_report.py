"""What ``nasmlcn search`` prints at the end of a run, from its ``SearchResult``:
the best trials or the front, the measured figures, the noise of one run and the
models within it of the best, failures, pruning and why the run stopped; and its ``--json``, the result's dictionary with the configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nasmlcn.cli._console import out, tell_interrupted

if TYPE_CHECKING:
    from nasmlcn.search import SearchConfig, SearchResult


def result_json(config: SearchConfig, result: SearchResult) -> dict[str, Any]:
    """What ``--json`` prints of one run: the result, the configuration, and whether
    its accuracies are the proxy's analytic stand-in."""
    data = result.to_dict()
    data["config"] = config.to_dict()
    data["accuracy_is_proxy"] = config.evaluator == "proxy"
    return data


def print_result(result: SearchResult, config: SearchConfig) -> None:
    from nasmlcn.cli._trials_table import (
        PROXY_NOTE,
        devices_line,
        print_measured,
        trials_table,
        why_none_feasible,
    )
    from nasmlcn.search import describe_counts

    names = result.metric_names
    multi = len(names) > 1
    title = "Pareto front" if multi else "best trials"
    # only complete and pruned trials count toward --trials: a failed one (retried
    # or not) is named apart, so that "20" means 20 results
    warm = result.warm_start
    if warm:
        refit = sum(1 for seed in warm["seeds"] if seed["refits"])
        rebuilt = [s["model"] for s in warm["seeds"] if (s.get("model") or {}).get("rebuilt")]
        same = sum(s.get("proposed", 1) - 1 for s in warm["seeds"])  # one model, 2 sources
        data_note = (
            f"{warm['transferred']} of its trials added as data for the sampler"
            if warm["transferred"]
            else f"none of its trials added as data ({warm['no_transfer']})"
        )
        out.print(
            f"warm start from {warm['source']}: {len(warm['seeds'])} of its best "
            f"architectures queued first ({refit} with parameters refit to this space; "
            f"{len(rebuilt)} rebuilt for these devices"
            + "".join(f", {r['lanes_before']} lanes -> {r['lanes_after']}" for r in rebuilt[:3])
            + f"); {data_note}"
            + (f"; {same} more of its best build those models (each queued once)" if same else "")
        )
    counts = result.trial_counts
    shown = describe_counts(counts, config.count_repeats) if counts else f"{result.n_trials} trials"
    table = trials_table(
        f"{title} of {result.study} ({shown})", result.best, names, width=out.width
    )
    if result.best:  # no empty table before the line that says why
        out.print(devices_line(config.devices), highlight=False)
        out.print(table)
    if config.evaluator == "proxy":
        out.print(PROXY_NOTE, highlight=False)
    if not result.best:
        why = why_none_feasible(result.completed, config.latency_budget, len(result.not_learning))
        out.print(why, highlight=False)
    if any(b["measured"] for b in result.best):
        print_measured(result.best, config.devices)
    _print_noise(result)
    if result.workers:
        each = result.workers[0]
        shared = max(w.get("workers_on_gpu", 1) for w in result.workers) > 1
        gpus = [",".join(w["gpus"]) for w in result.workers] if each["gpus"] is not None else []
        if shared:
            where = f"GPUs {', '.join(dict.fromkeys(gpus))}, up to {each['workers_on_gpu']} per GPU"
        elif gpus:
            where = f"GPUs {', '.join(gpus)}"
        else:
            where = f"{each['threads']} CPU thread(s) each"
        out.print(f"{len(result.workers)} workers ({where})", highlight=False)
    for error in result.errors:
        out.print(f"[yellow]{error}[/]", highlight=False, soft_wrap=True)
    _print_not_learning(result)
    if result.failures:
        out.print(f"{len(result.failures)} failed trial(s):")
        for f in result.failures:
            out.print(f"  trial {f.number}: {f.reason}", highlight=False, soft_wrap=True)
    _print_pruning(result, config)
    _print_stop(result)


def _print_noise(result: SearchResult) -> None:
    """The noise of one run (the study's replicates: ``SearchResult.noise``) and the
    listed models within it of the best, with the cheapest of them."""
    from nasmlcn._text import counted

    noise = result.noise
    if not noise:
        return
    last = noise["replicates"][-1]
    rough = "; one pair gives a rough estimate" if noise["pairs"] == 1 else ""
    out.print(
        f"noise of one run: sd {noise['sd']:.3f} of the accuracy, from "
        f"{counted(noise['pairs'], 'replicate')} (trial {last['number']} trained again "
        f"with another seed: {last['replicate_accuracy']:.4f}; its search run "
        f"{last['accuracy']:.4f}){rough}",
        highlight=False,
        soft_wrap=True,
    )
    best, within = noise["best"], noise["within"]
    if best is None:
        return
    band = f"{noise['margin']:.3f} of its accuracy, the 95 % band of two runs' difference"
    if len(within) < 2:
        out.print(
            f"no other listed model is within noise of the best, #{best} ({band})",
            highlight=False,
            soft_wrap=True,
        )
        return
    listed = noise["listed"]
    some = f"all {listed}" if len(within) == listed else f"{len(within)} of the {listed}"
    text = f"{some} listed models are within noise of the best, #{best} ({band}): " + ", ".join(
        f"#{n}" for n in within
    )
    cheapest = noise["cheapest"]
    if cheapest == best:
        text += "; the best is the cheapest of them by predicted training step (lanes and head)"
    elif cheapest is not None:
        text += (
            f"; the cheapest, #{cheapest}, has {noise['cheapest_step_ratio']:.2g}x its "
            "predicted training step (lanes and head)"
        )
    out.print(text, highlight=False, soft_wrap=True)


def _print_stop(result: SearchResult) -> None:
    """Why the run stopped, where it is not that it reached --trials."""
    from nasmlcn.search import REPEATS_IN_A_ROW

    stopped = result.stopped
    if stopped in ("interrupted", "terminated"):
        queued = [f"#{t.number}" for t in result.run_trials if t.queued_again_as is not None]
        what = (
            f"{'trials' if len(queued) > 1 else 'trial'} {', '.join(queued)} marked FAIL and "
            "queued again; re-run the same command to continue (it resumes "
            f"{'them' if len(queued) > 1 else 'it'})"
            if queued
            else "no trial was running; re-run the same command to continue"
        )
        why = "stopped by SIGTERM" if stopped == "terminated" else "interrupted"
        tell_interrupted(out, f"[yellow]{why}: {what}[/]", highlight=False)
    elif stopped == "timeout":
        out.print("stopped by --timeout; re-run the same command to continue")
    elif stopped == "failures":
        out.print(
            "[yellow]stopped: the last trials all failed (see the reasons above); failed "
            "trials do not count toward --trials[/]"
        )
    elif stopped == "repeats":
        out.print(
            f"[yellow]stopped: the last {REPEATS_IN_A_ROW} proposals (the sampler's, then "
            "random ones) were all models already trained or pruned (repeats train nothing): "
            "this space has few models left to try; search a larger one (a higher --flops, "
            "more devices, or --space with wider lane ranges) or use another --sampler[/]"
        )


def _print_not_learning(result: SearchResult) -> None:
    """The trials that did not learn: kept in the study, never on the front."""
    idle = result.not_learning
    if not idle:
        return
    threshold = result.learning_threshold
    below = f"accuracy below {threshold:.2g}" if threshold is not None else "accuracy near chance"
    numbers = ", ".join(f"#{t['number']}" for t in idle)
    trials = "trial" if len(idle) == 1 else "trials"
    out.print(
        f"{len(idle)} {trials} did not learn ({below}): {numbers} — kept in the study, "
        "not on the front",
        highlight=False,
        soft_wrap=True,
    )


def _print_pruning(result: SearchResult, config: SearchConfig) -> None:
    """The early-epoch correlation the pruner works from, and what pruning saved."""
    from rich.table import Table

    rows = result.correlation
    if len(rows) > 1:  # one epoch: nothing to correlate, nothing to prune
        table = Table(
            title="early-epoch correlation: accuracy after n epochs vs after the last, "
            f"{rows[0]['trials']} completed trials"
        )
        for column in ("epoch", "Pearson r", "Spearman rho", "trials", "prunes"):
            table.add_column(column, justify="right")
        for r in rows:
            table.add_row(
                str(r["epoch"]),
                f"{r['pearson']:.3f}" if r["pearson"] is not None else "-",
                f"{r['spearman']:.3f}" if r["spearman"] is not None else "-",
                str(r["trials"]),
                "-" if r is rows[-1] else "yes" if r["prunes"] else "no",  # the last: the result
            )
        out.print(table)
    if not config.prune:
        out.print("pruning off (--no-prune)")
        return
    in_study = result.pruned_in_study()
    pruned = [p for p in in_study if p.get("fits", True)]  # the rest: models too big to train
    replayed = sum(p.get("repeat_of") is not None for p in pruned)
    again = f" ({replayed} of them a pruned model's curve replayed)" if replayed else ""
    unfit = len(in_study) - len(pruned)
    saved = (
        f"{len(pruned)} pruned trial(s){again} saved about "
        f"{sum(p['seconds_saved'] for p in pruned):.0f} s of training"
        + (f"; {unfit} trial(s) proposed a model that does not fit the devices" if unfit else "")
    )
    if config.pruner == "halving":
        rate = config.halving_rate
        rule = (
            f"successive halving, rungs at epochs 1, {rate}, {rate * rate}, ... (before the "
            f"last); once {config.prune_min_trials} trials reach a rung, the best 1/{rate} go on"
        )
    else:
        rule = (
            f"an epoch prunes once {config.prune_min_trials} trials have completed "
            f"and its Spearman rho >= {config.prune_threshold:g}"
        )
    out.print(f"pruning on: {rule}; {saved}", highlight=False)


def print_sweep(results: list[SearchResult]) -> None:
    from rich.table import Table

    table = Table(title="sweep: average and best accuracy per setting (thesis Fig. 6.2 style)")
    for column in ("study", "completed trials", "mean accuracy", "best accuracy"):
        table.add_column(column, justify="left" if column == "study" else "right")
    for r in results:
        accs = [b["values"].get("accuracy") for b in r.best if b["values"]]
        accs = [a for a in accs if a is not None]
        mean = r.mean_values.get("accuracy")
        table.add_row(
            r.study,
            str(r.completed),
            f"{mean:.4f}" if mean is not None else "-",
            f"{max(accs):.4f}" if accs else "-",
        )
    out.print(table)
