"""``nasmlcn train``: train one architecture and report test accuracy."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

import typer

from nasmlcn._defaults import LEARNING_RATE
from nasmlcn._text import counted
from nasmlcn.cli._console import err, out
from nasmlcn.cli._options import ARCH, one_of
from nasmlcn.placement import PLACERS
from nasmlcn.specs import DECODERS, DEFAULT_LANES, DEFAULT_VOTE_INIT, ROUTINGS, VOTE_INITS
from nasmlcn.training import AUGMENTATIONS, BATCH_POLICIES, DEFAULT_LR_POLICY, LR_POLICIES

RENAMED = {"--timeout": "--rank-timeout", "--device": "--run-on"}
"""Old spellings still read (:mod:`nasmlcn.cli._renamed`): ``search --timeout`` is
the search's budget and ``search --run-on`` where training runs."""


def _described(registry: Any) -> str:
    return "; ".join(f"{name}: {registry.get(name).description}" for name in registry)


def train(
    lanes: str | None = typer.Option(
        None,
        "--lanes",
        help="Lanes in the compact syntax, e.g. '8*mlcn2:4x1' or 'mlcn1:4x2,mlcn2:2x1' "
        f"[default without --arch or --model: {DEFAULT_LANES}].",
    ),
    arch: Path | None = ARCH,
    model: str | None = typer.Option(
        None,
        "--model",
        help="A named architecture, e.g. capsnet or mlcn2-8x4 (see 'nasmlcn models').",
    ),
    dataset: str = typer.Option(
        "fashion-mnist", "--dataset", help="Dataset (see 'nasmlcn data list')."
    ),
    data_dir: Path | None = typer.Option(
        None,
        "--data-dir",
        help="Dataset directory [default: $NASMLCN_DATA_DIR or ~/.cache/nasmlcn/data].",
    ),
    download: bool = typer.Option(True, "--download/--no-download", help="Download missing data."),
    epochs: int = typer.Option(10, "--epochs", min=1, help="Training epochs."),
    batch_size: int = typer.Option(100, "--batch-size", min=1, help="Training batch size."),
    lr: float = typer.Option(LEARNING_RATE, "--lr", help="Initial Adam learning rate."),
    lr_policy: str | None = typer.Option(
        None,
        "--lr-policy",
        help=f"{_described(LR_POLICIES)} (a one-cycle or phase-restarts run resumes but "
        f"cannot be extended) [default: {DEFAULT_LR_POLICY}; with --batch-policy "
        "warmadabatch: phase-restarts].",
    ),
    batch_policy: str = typer.Option(
        "fixed",
        "--batch-policy",
        help=f"Batch size per epoch: {_described(BATCH_POLICIES)}.",
    ),
    augment: str = typer.Option(
        "none",
        "--augment",
        help=f"Training-batch augmentation: {_described(AUGMENTATIONS)}.",
    ),
    routing: str | None = typer.Option(
        None, "--routing", help=f"Lane routing: {one_of(ROUTINGS)}."
    ),
    decoder: str | None = typer.Option(None, "--decoder", help=f"Decoder: {one_of(DECODERS)}."),
    lane_dropout: float | None = typer.Option(
        None, "--lane-dropout", help="Lane dropout probability."
    ),
    vote_init: str | None = typer.Option(
        None,
        "--vote-init",
        help=f"How an MLCN's vote transforms start: {one_of(VOTE_INITS)} (glorot: the "
        f"reference code's Keras init) [default: {DEFAULT_VOTE_INIT}, or as in --arch].",
    ),
    weight_sharing: bool | None = typer.Option(
        None,
        "--weight-sharing/--no-weight-sharing",
        help="Share each capsule channel's vote transform over its positions (FasTrCaps; "
        "CapsNet 8.2 M -> 6.8 M parameters) [default: off, or as in --arch].",
    ),
    train_limit: int | None = typer.Option(
        None, "--train-limit", min=1, help="Use N training images."
    ),
    val_limit: int | None = typer.Option(
        None, "--val-limit", min=1, help="Use N validation images."
    ),
    test_limit: int | None = typer.Option(None, "--test-limit", min=1, help="Use N test images."),
    seed: int = typer.Option(
        0, "--seed", min=0, help="Seed for the split, initialisation and shuffling."
    ),
    run_on: str = typer.Option(
        "auto",
        "--run-on",
        help="Where training runs: auto, cpu, cuda or cuda:N. With --devices also "
        "cuda:0,cuda:1,... (target device j runs on entry j mod n).",
    ),
    devices: str | None = typer.Option(
        None,
        "--devices",
        help="Lane-parallel: target devices, as in search, e.g. 2xH100 or 1xK80,1xV100: "
        "the lanes are placed as for them, and each one's lanes run on a local device "
        "(--run-on; auto: the matching GPUs). 2xcpu is legal in one process but gives "
        "no speedup: use --processes for CPU parallelism.",
    ),
    placement: str = typer.Option(
        "greedy", "--placement", help=f"Lane placement: {one_of(PLACERS)}."
    ),
    processes: int = typer.Option(
        1,
        "--processes",
        min=1,
        help="Train with N local processes (gloo on CPU, one GPU each with NCCL); "
        "for several nodes run 'torchrun ... -m nasmlcn train' instead.",
    ),
    parallelism: str = typer.Option(
        "lanes",
        "--parallelism",
        help="With several processes: lanes (each owns some lanes) or data (DDP baseline).",
    ),
    rank_timeout: float = typer.Option(
        300.0,
        "--rank-timeout",
        min=1.0,
        help="Seconds a multi-process rank waits for its peers before failing.",
    ),
    fuse_lanes: bool = typer.Option(
        True,
        "--fuse-lanes/--no-fuse-lanes",
        help="Run lanes of one kind as one computation (the same model and checkpoints); "
        "--no-fuse-lanes runs them one after another, for comparison.",
    ),
    cuda_graphs: bool = typer.Option(
        True,
        "--cuda-graphs/--no-cuda-graphs",
        help="On a GPU, replay each training and evaluation step from a CUDA graph "
        "(captured after 2 eager steps of each batch size); --no-cuda-graphs runs eagerly.",
    ),
    out_dir: Path | None = typer.Option(
        None,
        "--out",
        help="Output directory for checkpoint.pt, arch.json, result.json [default: runs/<time>].",
    ),
    resume: bool = typer.Option(False, "--resume", help="Continue the checkpoint in --out."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress display."),
) -> None:
    """Train an MLCN (or the CapsNet baseline) and evaluate it on the test set.

    Lane-parallel on one machine: --devices 2xH100 (lanes on cuda:0/cuda:1) or
    --processes 2 (two CPU processes). On several nodes: torchrun --nnodes 2
    --nproc-per-node 4 --rdzv-backend c10d --rdzv-endpoint HOST:29400 -m nasmlcn
    train ... (every rank runs this command; rank 0 reports).
    """
    from nasmlcn.cli._progress import TrainProgress
    from nasmlcn.data import DATASETS
    from nasmlcn.parallel import reports_here
    from nasmlcn.training import TrainConfig, TrainJob, default_lr_policy, resolve_arch
    from nasmlcn.training import train as train_job

    spec = resolve_arch(
        DATASETS.get(dataset),
        lanes=lanes,
        arch=arch,
        model=model,
        routing=routing,
        decoder=decoder,
        lane_dropout=lane_dropout,
        weight_sharing=weight_sharing,
        vote_init=vote_init,
    )
    config = TrainConfig(
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        lr_policy=lr_policy or default_lr_policy(batch_policy),
        batch_policy=batch_policy,
        seed=seed,
        device=run_on,
        augment=augment,
        fuse_lanes=fuse_lanes,
        cuda_graphs=cuda_graphs,
    )
    if out_dir is None:
        out_dir = Path("runs") / time.strftime(f"train-%Y%m%d-%H%M%S-{dataset}")
    job = TrainJob(
        spec,
        dataset=dataset,
        config=config,
        data_dir=str(data_dir) if data_dir else None,
        download=download,
        train_limit=train_limit,
        val_limit=val_limit,
        test_limit=test_limit,
        out_dir=str(out_dir),
        resume=resume,
    )
    reporting = reports_here()
    title = (
        f"training {spec.describe()} on {dataset}, {counted(epochs, 'epoch')}, batch {batch_size}"
    )
    if batch_policy != "fixed":
        title += f" ({batch_policy}, lr {config.lr_policy})"
    if augment != "none":
        title += f", augment {augment}"
    with contextlib.ExitStack() as stack:
        show = reporting and not quiet
        callbacks = [stack.enter_context(TrainProgress(err, title))] if show else []
        report = train_job(
            job,
            devices=devices,
            placement=placement,
            processes=processes,
            parallelism=parallelism,
            device=run_on,
            timeout_s=rank_timeout,
            callbacks=callbacks,
        )
    if report is None or not reporting:
        return
    result = report.to_dict()
    if as_json:
        print(json.dumps(result))
        return
    _print_summary(result)


def _test_line(result: dict[str, Any]) -> str:
    """The selected model's test accuracy, which epoch it is and why, the last epoch's."""
    epochs, selected = result["epochs"], result["selected_epoch"]
    line = (
        f"{result['test_accuracy']:.4f} ({result['test_images']:,} images), "
        f"epoch {selected} of {epochs}: best validation"
    )
    if selected != epochs:
        line += f"; last epoch {result['last_epoch_test_accuracy']:.4f}"
    return line


def _print_summary(result: dict[str, Any]) -> None:
    from rich.table import Table

    table = Table(title=f"{result['lanes']} on {result['dataset']}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    table.add_row("parameters", f"{result['params']:,}")
    table.add_row(
        "val accuracy by epoch", ", ".join(f"{a:.4f}" for a in result["val_accuracy_per_epoch"])
    )
    table.add_row("test accuracy", _test_line(result))
    table.add_row("seconds / epoch", f"{result['seconds_per_epoch']:.1f}")
    table.add_row("images / second", f"{result['images_per_second']:.0f}")
    table.add_row("device", result["device"])
    if "parallel" in result:
        p = result["parallel"]
        lanes = ""
        if p["assignment"]:
            owners = p["devices"] if p["launcher"] == "in-process" else None
            groups: dict[str, list[int]] = {}
            for lane, where in enumerate(p["assignment"]):
                key = owners[lane] if owners else f"rank {where}"
                groups.setdefault(key, []).append(lane)
            lanes = "; " + ", ".join(
                f"{k}: lanes {','.join(map(str, v))}" for k, v in groups.items()
            )
        table.add_row(
            "parallelism", f"{p['mode']}, {p['processes']} process(es), {p['launcher']}{lanes}"
        )
    table.add_row("output", str(result["out_dir"]))
    out.print(table)
