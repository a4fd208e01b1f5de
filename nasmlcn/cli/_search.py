"""``nasmlcn search``: the main job — an Optuna study over MLCNs for target devices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import typer

from nasmlcn._signals import EXIT_INTERRUPTED, EXIT_TERMINATED
from nasmlcn.cli._config_options import with_config_options
from nasmlcn.cli._console import err
from nasmlcn.cli._options import JSON, local_file
from nasmlcn.cli._search_report import print_result, print_sweep, result_json
from nasmlcn.errors import SearchError, cli_option, option
from nasmlcn.search import SearchConfig

if TYPE_CHECKING:
    from nasmlcn.search import SearchResult


@with_config_options(SearchConfig)  # --devices, --epochs, ...: one per SearchConfig field
def search(
    config: Path | None = typer.Option(
        None,
        "--config",
        parser=local_file,
        help="A study recipe (TOML), e.g. studies/thesis-fig6.2.toml.",
    ),
    workers: int = typer.Option(
        1,
        "--workers",
        min=1,
        max=1024,
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
    as_json: bool = JSON,
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live display."),
    **given: Any,
) -> int:
    """Search MLCNs that fit the target devices (Optuna study, SQL storage)."""
    options = {name: str(v) if isinstance(v, Path) else v for name, v in given.items()}
    configs, first = _configs(config, options)
    pool = Pool(workers, gpus_per_trial, workers_per_gpu)
    runs: list[tuple[SearchConfig, SearchResult]] = []
    for one in configs:  # a sweep runs one study per setting
        result = _run_one(one, quiet=quiet, pool=pool, first="" if runs else first)
        if not as_json:
            print_result(result, one)
        runs.append((one, result))
        if result.stopped in STOPPED_BY_SIGNAL:  # Ctrl-C or SIGTERM ends the sweep too
            break
    if as_json:
        payloads = [result_json(c, r) for c, r in runs]
        print(json.dumps(payloads[0] if len(payloads) == 1 else {"sweep": payloads}))
    elif len(runs) > 1:
        print_sweep([r for _, r in runs])
    return next(
        (STOPPED_BY_SIGNAL[r.stopped] for _, r in runs if r.stopped in STOPPED_BY_SIGNAL), 0
    )


STOPPED_BY_SIGNAL = {"interrupted": EXIT_INTERRUPTED, "terminated": EXIT_TERMINATED}
"""A run's stop by Ctrl-C (SIGINT) or SIGTERM, and the command's exit status then."""


def _configs(recipe_path: Path | None, options: dict[str, Any]) -> tuple[list[SearchConfig], str]:
    """The run's configurations (a sweep's: one per setting) from the recipe, the
    stored study and the options given, each checked before any study is made, and
    the line that names the defaults a new study takes (:func:`_defaults_line`); a
    study name no study has, with nothing that defines a search, is refused."""
    from nasmlcn._storage_url import DEFAULT_STORAGE, resolve_storage
    from nasmlcn.search import (
        expand_sweep,
        load_search_recipe,
        refuse_undefined_study,
        stored_config,
    )

    named = {name for name, v in options.items() if v is not None}
    sweep: dict[str, list[Any]] = {}
    base = SearchConfig()
    if recipe_path is not None:
        recipe, sweep, _ = load_search_recipe(recipe_path)
        base = base.with_overrides(**recipe)
        _refuse_swept(options, sweep, recipe_path)
        named |= {*recipe, *sweep}
    # --storage, else $NASMLCN_STORAGE, else the recipe's, else the default
    options["storage"] = resolve_storage(
        options["storage"], fallback=base.storage or DEFAULT_STORAGE
    )
    stored = None
    if recipe_path is None and options.get("study") is not None:
        # --study NAME of an existing study: its stored settings, unless given again;
        # a name no study has, with nothing that defines a search, is taken for a typo
        stored = stored_config(options["study"], options["storage"])
        if stored is None:
            refuse_undefined_study(options["study"], options["storage"], named)
        base = stored or base
    configs = expand_sweep(base.with_overrides(**options), sweep)
    return configs, _defaults_line(configs[0], named) if stored is None else ""


def _defaults_line(config: SearchConfig, named: set[str]) -> str:
    """Where a new study takes nasmlcn's defaults for its data, devices or epochs, the
    line that says so, first once its study is made (so that a forgotten
    ``--dataset`` shows at once); empty otherwise."""
    from nasmlcn.search import defaults_taken, stored_config

    taken = defaults_taken(config, named)
    if not taken or stored_config(config.study_name(), config.storage) is not None:
        return ""
    shown = {"dataset": "data {}", "devices": "devices {}", "epochs": "{} epochs"}
    return (
        f"new study {config.study_name()!r} on defaults: "
        + ", ".join(shown[name].format(value) for name, value in taken)
        + " (give "
        + ", ".join(cli_option(name) for name, _ in taken)
        + " to choose)"
    )


def _refuse_swept(options: dict[str, Any], sweep: dict[str, list[Any]], recipe: Path) -> None:
    """An option the recipe sweeps: the sweep would overwrite it, silently."""
    for name, values in sweep.items():
        if options.get(name) is not None:
            raise SearchError(
                f"{option(name)} {options[name]} cannot be given with {recipe}: the recipe "
                f"sweeps {name} over {', '.join(map(str, values))} (drop {option(name)}, or "
                "edit its [sweep])"
            )


class Pool(NamedTuple):
    """Where the trials run: ``--workers``, ``--gpus-per-trial``, ``--workers-per-gpu``."""

    workers: int
    gpus_per_trial: int | None
    workers_per_gpu: int | None


def _tracker(uri: str | None) -> list[Any]:
    """``[MlflowObserver(uri)]``, or none."""
    if not uri:
        return []
    from nasmlcn.tracking import MlflowObserver

    return [MlflowObserver(uri)]


def _run_one(config: SearchConfig, *, quiet: bool, pool: Pool, first: str = "") -> SearchResult:
    """Runs one search (of a sweep: one setting), with its live display unless
    ``quiet``; ``first`` is said once the configuration is checked."""
    import functools

    from nasmlcn.cli._search_progress import NoticePrinter, SearchProgress
    from nasmlcn.dashboard import DashboardObserver
    from nasmlcn.search import run_search

    # the tracker SearchConfig.mlflow asks for: made here, opened once the search has
    # checked its configuration (the search itself imports nothing of tracking); with
    # workers, run_search splits each observer between this process and the workers
    observers: list[Any] = [DashboardObserver(), *_tracker(config.mlflow)]
    run = functools.partial(
        run_search,
        workers=pool.workers,
        gpus_per_trial=pool.gpus_per_trial,
        workers_per_gpu=pool.workers_per_gpu,
    )
    if quiet:
        result: SearchResult = run(config, [NoticePrinter(err, first), *observers])
    else:
        with SearchProgress(err, first) as progress:
            result = run(config, [progress, *observers])
    return result
