"""``nasmlcn search``: the main job — an Optuna study over MLCNs for target devices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from nasmlcn.cli._console import err
from nasmlcn.cli._options import STORAGE, one_of
from nasmlcn.cli._search_report import print_result, print_sweep
from nasmlcn.costs import COST_MODELS


def search(
    devices: str | None = typer.Option(
        None, "--devices", help="Target devices, e.g. 8xK80 or 1xK80,1xV100 [default: 8xK80]."
    ),
    mem: str | None = typer.Option(None, "--mem", help="Memory of every device, e.g. 12GB."),
    flops: str | None = typer.Option(
        None,
        "--flops",
        help="Per-device load limit: a multiple of the thesis baseline (1x, 4x) or FLOPs per "
        "image (2.4G) [default: 1x].",
    ),
    space: str | None = typer.Option(
        None, "--space", help="Search space name or .toml path [default: mlcn-buckets]."
    ),
    sampler: str | None = typer.Option(
        None, "--sampler", help="random, tpe, nsga2 or gp [default: tpe]."
    ),
    objectives: str | None = typer.Option(
        None,
        "--objectives",
        help="accuracy[,latency,inference,memory,params,energy]; several make a Pareto study "
        "[default: accuracy]. latency: predicted training step time; inference: "
        "predicted per-image inference latency (batch 1); energy: per inference on "
        "CapsAcc (--devices capsacc).",
    ),
    evaluator: str | None = typer.Option(
        None, "--evaluator", help="train (real training) or proxy (analytic stand-in)."
    ),
    dataset: str | None = typer.Option(None, "--dataset", help="Dataset [default: fashion-mnist]."),
    data_dir: Path | None = typer.Option(None, "--data-dir", help="Dataset directory."),
    epochs: int | None = typer.Option(
        None, "--epochs", min=1, help="Epochs per trial [default: 10]."
    ),
    train_limit: int | None = typer.Option(
        None, "--train-limit", min=1, help="Training images per epoch [default: all]."
    ),
    val_limit: int | None = typer.Option(
        None, "--val-limit", min=1, help="Validation images [default: all held out]."
    ),
    batch_size: int | None = typer.Option(
        None, "--batch-size", min=1, help="Batch size [default: 100]."
    ),
    trials: int | None = typer.Option(
        None,
        "--trials",
        min=1,
        help="Trials the study should reach; re-running continues [default: 20]. A trial "
        "that proposes a model already trained takes its result (a repeat: no training); "
        "repeats count here unless --no-count-repeats, and a run stops after 25 repeats "
        "in a row.",
    ),
    count_repeats: bool | None = typer.Option(
        None,
        "--count-repeats/--no-count-repeats",
        help="Whether repeats count toward --trials [default: they do]. "
        "--no-count-repeats makes --trials a budget of trainings: every counted trial "
        "trains a model not trained before.",
    ),
    timeout: float | None = typer.Option(
        None,
        "--timeout",
        help="Stop the search after this many seconds (> 0): no new trial, and the running "
        "one stops within a batch, as Ctrl-C stops it (FAIL, queued again; a re-run resumes "
        "it).",
    ),
    trial_timeout: float | None = typer.Option(
        None,
        "--trial-timeout",
        help="Stop a trial at the first epoch boundary after this many seconds (> 0): "
        "PRUNED, with the reason; its epochs are kept.",
    ),
    grace: float | None = typer.Option(
        None,
        "--grace",
        min=1.0,
        help="Seconds without a heartbeat after which a running trial's worker counts as "
        "dead: its trial is failed and queued again [default: 120].",
    ),
    max_retries: int | None = typer.Option(
        None,
        "--max-retries",
        min=0,
        help="Times a trial whose worker died (or that Ctrl-C stopped) is queued again "
        "[default: 3].",
    ),
    artifacts: Path | None = typer.Option(
        None,
        "--artifacts",
        help="Folder for trial checkpoints and weights (Optuna artifacts) [default: "
        "artifacts/ beside a SQLite study file, else studies/artifacts].",
    ),
    keep_weights: str | None = typer.Option(
        None,
        "--keep-weights",
        help="Which finished trials keep their weights: all, pareto or best:K [default: all].",
    ),
    prune: bool | None = typer.Option(
        None, "--prune/--no-prune", help="Correlation-gated pruning of weak trials."
    ),
    prune_threshold: float | None = typer.Option(
        None,
        "--prune-threshold",
        help="Prune at an epoch only once its Spearman rho with the last epoch reaches this "
        "(-1 to 1) [default: 0.9].",
    ),
    prune_percentile: float | None = typer.Option(
        None,
        "--prune-percentile",
        help="Prune trials below this percentile of the finished ones (> 0, < 100) [default: 50].",
    ),
    prune_min_trials: int | None = typer.Option(
        None,
        "--prune-min-trials",
        min=1,
        help="Finished trials needed before pruning starts [default: 5].",
    ),
    pruner: str | None = typer.Option(
        None,
        "--pruner",
        help="The pruning rule: correlation (stops trials expected to be dominated) or "
        "halving (successive halving over epochs: multi-fidelity, tries more candidates "
        "for the same compute) [default: correlation].",
    ),
    halving_rate: int | None = typer.Option(
        None,
        "--halving-rate",
        help="With --pruner halving: rungs at epochs 1, R, R^2, ... keep the best 1/R "
        "(R >= 2) [default: 3].",
    ),
    warm_start: str | None = typer.Option(
        None,
        "--warm-start",
        metavar="STUDY",
        help="Start a new study from an earlier one (other devices or --mem welcome): its "
        "best architectures are the first trials, refit to these devices, and where the "
        "parameters and training match, its trials are data for the sampler.",
    ),
    warm_start_storage: str | None = typer.Option(
        None,
        "--warm-start-storage",
        help="Storage URL of the --warm-start study [default: --storage].",
    ),
    warm_start_top: int | None = typer.Option(
        None,
        "--warm-start-top",
        help="How many of the earlier study's best trials to queue (>= 1) [default: 5].",
    ),
    storage: str | None = STORAGE,
    study: str | None = typer.Option(
        None, "--study", help="Study name [default: derived from the configuration]."
    ),
    config: Path | None = typer.Option(
        None, "--config", help="A study recipe (TOML), e.g. studies/thesis-fig6.2.toml."
    ),
    run_on: str | None = typer.Option(
        None, "--run-on", help="Where training runs: auto, cpu or cuda:0,... [default: auto]."
    ),
    seed: int | None = typer.Option(None, "--seed", min=0, help="Seed [default: 0]."),
    cost_model: str | None = typer.Option(
        None, "--cost-model", help=f"{one_of(COST_MODELS)} [default: analytic]."
    ),
    latency_budget: float | None = typer.Option(
        None,
        "--latency-budget",
        help="Constraint: predicted step time <= this many seconds (> 0).",
    ),
    device_file: Path | None = typer.Option(
        None, "--device-file", help="Extra device catalog (TOML)."
    ),
    calibration: Path | None = typer.Option(
        None, "--calibration", help="Calibration file of the calibrated cost model."
    ),
    mlflow: str | None = typer.Option(
        None,
        "--mlflow",
        help="Log every trial to MLflow at this tracking URI (a folder, sqlite:///mlflow.db, "
        "http://host:5000): one run per trial under one parent run per study. Needs "
        "pip install 'nasmlcn[tracking]'.",
    ),
    workers: int = typer.Option(
        1,
        "--workers",
        min=1,
        help="Worker processes on this machine, sharing the study (with --gpus-per-trial "
        "and no --workers: GPUs / K; with --workers-per-gpu: GPUs x K; on CPU they split "
        "the cores).",
    ),
    gpus_per_trial: int | None = typer.Option(
        None,
        "--gpus-per-trial",
        min=1,
        help="Give each worker its own K GPUs (CUDA_VISIBLE_DEVICES): 8 GPUs run 8 one-GPU "
        "or 2 four-GPU lane-parallel trials at once.",
    ),
    workers_per_gpu: int | None = typer.Option(
        None,
        "--workers-per-gpu",
        min=1,
        help="Put K workers on each GPU, one GPU per trial (implies --gpus-per-trial 1): "
        "worker i trains on GPU i // K, and each trial's model must fit 1/K of the GPU's "
        "memory; refused up front if the search's largest model cannot fit K times.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live display."),
) -> int:
    """Search MLCNs that fit the target devices (Optuna study, SQL storage)."""
    from nasmlcn._storage_url import DEFAULT_STORAGE, resolve_storage
    from nasmlcn.search import SearchConfig, expand_sweep, load_recipe

    options: dict[str, Any] = {
        "devices": devices,
        "mem": mem,
        "flops": flops,
        "space": space,
        "sampler": sampler,
        "objectives": tuple(o.strip() for o in objectives.split(",") if o.strip())
        if objectives is not None  # an empty --objectives is an error, not the default
        else None,
        "evaluator": evaluator,
        "dataset": dataset,
        "data_dir": str(data_dir) if data_dir else None,
        "epochs": epochs,
        "train_limit": train_limit,
        "val_limit": val_limit,
        "batch_size": batch_size,
        "trials": trials,
        "count_repeats": count_repeats,
        "timeout": timeout,
        "trial_timeout": trial_timeout,
        "grace": grace,
        "max_retries": max_retries,
        "artifacts": str(artifacts) if artifacts else None,
        "keep_weights": keep_weights,
        "prune": prune,
        "prune_threshold": prune_threshold,
        "prune_percentile": prune_percentile,
        "prune_min_trials": prune_min_trials,
        "pruner": pruner,
        "halving_rate": halving_rate,
        "warm_start": warm_start,
        "warm_start_storage": warm_start_storage,
        "warm_start_top": warm_start_top,
        "storage": storage,
        "study": study,
        "run_on": run_on,
        "seed": seed,
        "cost_model": cost_model,
        "latency_budget": latency_budget,
        "device_file": str(device_file) if device_file else None,
        "calibration": str(calibration) if calibration else None,
        "mlflow": mlflow,
    }
    sweep: dict[str, list[Any]] = {}
    base = SearchConfig()
    if config is not None:
        recipe, sweep, _ = load_recipe(config)
        base = base.with_overrides(**recipe)
        for name, values in sweep.items():
            if options.get(name) is not None:  # the sweep would overwrite it, silently
                from nasmlcn.errors import SearchError

                flag = "--" + name.replace("_", "-")
                raise SearchError(
                    f"{flag} {options[name]} cannot be given with {config}: the recipe sweeps "
                    f"{name} over {', '.join(map(str, values))} (drop {flag}, or edit its [sweep])"
                )
    # --storage, else $NASMLCN_STORAGE, else the recipe's, else the default
    options["storage"] = resolve_storage(storage, fallback=base.storage or DEFAULT_STORAGE)
    base = base.with_overrides(**options)
    configs = expand_sweep(base, sweep)  # a bad value is refused before any study is made
    pool = {
        "workers": workers,
        "gpus_per_trial": gpus_per_trial,
        "workers_per_gpu": workers_per_gpu,
    }
    results = [_run_one(c, as_json=as_json, quiet=quiet, pool=pool) for c in configs]
    if as_json:
        payload = results[0] if len(results) == 1 else {"sweep": results}
        print(json.dumps(payload))
    elif len(results) > 1:
        print_sweep(results)
    interrupted = any(r["stopped"] == "interrupted" for r in results)
    return 130 if interrupted else 0


def _tracker(uri: str | None) -> Any:
    """``MlflowObserver`` bound to ``uri`` (a picklable factory), or None."""
    import functools

    if not uri:
        return None
    from nasmlcn.tracking import MlflowObserver

    return functools.partial(MlflowObserver, uri)


def _run_one(config: Any, *, as_json: bool, quiet: bool, pool: dict[str, Any]) -> dict[str, Any]:
    import functools
    import warnings

    import optuna

    from nasmlcn.cli._search_progress import SearchProgress
    from nasmlcn.dashboard import DashboardObserver
    from nasmlcn.search import run_search, run_workers

    # the tracker SearchConfig.mlflow asks for: made here, opened once the search has
    # checked its configuration (the search itself imports nothing of tracking)
    tracker = _tracker(config.mlflow)
    observers: list[Any] = [DashboardObserver()]
    run: Any = run_search
    on_gpus = pool["gpus_per_trial"] is not None or pool["workers_per_gpu"] is not None
    if pool["workers"] > 1 or on_gpus:
        # --workers 1 (the default) on GPUs: as many workers as the GPUs take
        workers = None if on_gpus and pool["workers"] == 1 else pool["workers"]
        # each worker writes its trials' notes as they end; the figures once, here.
        # MLflow: this process opens and closes the study's parent run, and each
        # worker logs its own trials under it
        observers = [DashboardObserver(notes=False)]
        made: list[Any] = [functools.partial(DashboardObserver, figures=False)]
        if tracker is not None:
            observers.append(tracker(trials=False))
            made.append(functools.partial(tracker, end_parent=False))
        run = functools.partial(
            run_workers,
            workers=workers,
            gpus_per_trial=pool["gpus_per_trial"],
            workers_per_gpu=pool["workers_per_gpu"],
            worker_observers=made,
        )
    elif tracker is not None:
        observers.append(tracker())

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage")
        if quiet:
            result = run(config, observers)
        else:
            with SearchProgress(err) as progress:
                result = run(config, [progress, *observers])
    data = result.to_dict()
    data["config"] = config.to_dict()
    # the proxy's accuracies are an analytic stand-in: every output says so
    data["accuracy_is_proxy"] = config.evaluator == "proxy"
    if not as_json:
        print_result(data)
    return data
