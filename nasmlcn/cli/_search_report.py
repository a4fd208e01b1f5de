"""What ``nasmlcn search`` prints at the end: the best trials or the front, the
measured figures, failures, pruning and why a run stopped (its ``--json`` is the
same dictionary, printed as it is)."""

from __future__ import annotations

from typing import Any

from nasmlcn.cli._console import out


def print_result(data: dict[str, Any]) -> None:
    from rich.table import Table

    from nasmlcn.cli._best import (
        PROXY_NOTE,
        number_cell,
        predicted_cells,
        predicted_heads,
        print_measured,
        why_none_feasible,
    )
    from nasmlcn.dashboard import metric_cell, metric_heading, predicted_on, shown_predictions
    from nasmlcn.search import describe_counts

    names = data["metric_names"]
    multi = len(names) > 1
    title = "Pareto front" if multi else "best trials"
    # only complete and pruned trials count toward --trials: a failed one (retried
    # or not) is named apart, so that "20" means 20 results
    warm = data.get("warm_start")
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
    counts = data.get("trial_counts")
    repeats_counted = (data.get("config") or {}).get("count_repeats", True)
    shown = describe_counts(counts, repeats_counted) if counts else f"{data['n_trials']} trials"
    table = Table(title=f"{title} of {data['study']} ({shown})")
    devices = data["config"].get("devices")
    on = predicted_on(devices)
    extra = shown_predictions(names)  # a predicted column that is no objective already
    heads = [
        "#", "lane mix", *(metric_heading(n, devices) for n in names), "lanes",
        *predicted_heads(on, extra),
        "imbalance",
    ]  # fmt: skip
    for column in heads:
        table.add_column(
            column, overflow="fold", justify="left" if column == "lane mix" else "right"
        )
    for best in data["best"]:
        values = best["values"] or {}
        predicted = best["predicted"]
        unit = predicted.get("time_unit", "s")
        table.add_row(
            number_cell(best),
            best["lane_mix"] or best["lanes"] or "",
            *(metric_cell(n, values.get(n), unit) for n in names),
            str(best["num_lanes"]),
            *predicted_cells(predicted, extra),
            f"{predicted.get('imbalance', 0):.1%}",
        )
    out.print(table)
    if data["config"].get("evaluator") == "proxy":
        out.print(PROXY_NOTE, highlight=False)
    if not data["best"]:
        out.print(
            why_none_feasible(data["completed"], data["config"].get("latency_budget")),
            highlight=False,
        )
    if data["best"] and any(b["measured"] for b in data["best"]):
        print_measured(data["best"], devices)
    if data["workers"]:
        each = data["workers"][0]
        shared = max(w.get("workers_on_gpu", 1) for w in data["workers"]) > 1
        gpus = [",".join(w["gpus"]) for w in data["workers"]] if each["gpus"] is not None else []
        if shared:
            where = f"GPUs {', '.join(dict.fromkeys(gpus))}, up to {each['workers_on_gpu']} per GPU"
        elif gpus:
            where = f"GPUs {', '.join(gpus)}"
        else:
            where = f"{each['threads']} CPU thread(s) each"
        out.print(f"{len(data['workers'])} workers ({where})", highlight=False)
    for error in data["errors"]:
        out.print(f"[yellow]{error}[/]", highlight=False, soft_wrap=True)
    _print_not_learning(data)
    failures = data["failures"]
    if failures:
        out.print(f"{len(failures)} failed trial(s):")
        for f in failures:
            out.print(f"  trial {f['number']}: {f['reason']}", highlight=False, soft_wrap=True)
    _print_pruning(data)
    if data["stopped"] == "interrupted":
        out.print(
            "[yellow]interrupted: the running trial is marked FAIL and queued again; re-run "
            "the same command to continue (it resumes that trial)[/]"
        )
    elif data["stopped"] == "timeout":
        out.print("stopped by --timeout; re-run the same command to continue")
    elif data["stopped"] == "failures":
        out.print(
            "[yellow]stopped: the last trials all failed (see the reasons above); failed "
            "trials do not count toward --trials[/]"
        )
    elif data["stopped"] == "repeats":
        out.print(
            f"[yellow]stopped: the sampler's last {REPEATS_IN_A_ROW} proposals were all models "
            "already trained (repeats train nothing); the search has nothing new to try in "
            "this space[/]"
        )


REPEATS_IN_A_ROW = 25  # nasmlcn.search._repeats.REPEATS_IN_A_ROW (no search import here)


def _print_not_learning(data: dict[str, Any]) -> None:
    """The trials that did not learn: kept in the study, never on the front."""
    idle = data.get("not_learning") or []
    if not idle:
        return
    threshold = data.get("learning_threshold")
    below = f"accuracy below {threshold:.2g}" if threshold is not None else "accuracy near chance"
    numbers = ", ".join(f"#{t['number']}" for t in idle)
    trials = "trial" if len(idle) == 1 else "trials"
    out.print(
        f"{len(idle)} {trials} did not learn ({below}): {numbers} — kept in the study, "
        "not on the front",
        highlight=False,
        soft_wrap=True,
    )


def _print_pruning(data: dict[str, Any]) -> None:
    """The early-epoch correlation the pruner works from, and what pruning saved."""
    from rich.table import Table

    rows = data["correlation"]
    config = data["config"]
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
    if not config["prune"]:
        out.print("pruning off (--no-prune)")
        return
    saved = (
        f"{len(data['pruned'])} pruned trial(s) saved about "
        f"{data['seconds_saved_by_pruning']:.0f} s of training"
    )
    if config.get("pruner") == "halving":
        rate = config["halving_rate"]
        rule = (
            f"successive halving, rungs at epochs 1, {rate}, {rate * rate}, ... (before the "
            f"last); once {config['prune_min_trials']} trials reach a rung, the best 1/{rate} go on"
        )
    else:
        rule = (
            f"an epoch prunes once {config['prune_min_trials']} trials have completed "
            f"and its Spearman rho >= {config['prune_threshold']:g}"
        )
    out.print(f"pruning on: {rule}; {saved}", highlight=False)


def print_sweep(results: list[dict[str, Any]]) -> None:
    from rich.table import Table

    table = Table(title="sweep: average and best accuracy per setting (thesis Fig. 6.2 style)")
    for column in ("study", "completed trials", "mean accuracy", "best accuracy"):
        table.add_column(column, justify="left" if column == "study" else "right")
    for r in results:
        accs = [b["values"].get("accuracy") for b in r["best"] if b["values"]]
        accs = [a for a in accs if a is not None]
        mean = r["mean_values"].get("accuracy")
        table.add_row(
            r["study"],
            str(r["completed"]),
            f"{mean:.4f}" if mean is not None else "-",
            f"{max(accs):.4f}" if accs else "-",
        )
    out.print(table)
