"""The options of ``nasmlcn train``, declared once (:mod:`nasmlcn.cli._command_options`):
each field is an option, in ``--help``'s order, and :class:`TrainOptions` turns
their values into the library's ``TrainConfig`` and ``TrainJob``. The training
settings (``--epochs`` ... ``--cuda-graphs``) are ``TrainConfig``'s own fields'
options (:func:`~nasmlcn.cli._config_options.config_option`): their defaults, helps
and ranges are written in ``TrainConfig``, which checks the values given."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from nasmlcn._text import counted
from nasmlcn.cli._command_options import option
from nasmlcn.cli._config_options import config_option, given_settings
from nasmlcn.cli._options import (
    ARCH,
    DATASET,
    DEVICE_FILE,
    IMAGE_SIZE,
    JSON,
    QUIET,
    local_file,
    one_of,
)
from nasmlcn.placement import PLACERS
from nasmlcn.specs import DECODERS, DEFAULT_LANES, DEFAULT_VOTE_INIT, ROUTINGS, VOTE_INITS
from nasmlcn.training import TrainConfig

if TYPE_CHECKING:
    from nasmlcn.data import DatasetInfo
    from nasmlcn.hardware import DeviceSpec
    from nasmlcn.specs import ArchSpec
    from nasmlcn.training import TrainJob


@dataclass(frozen=True, kw_only=True)
class TrainOptions:
    """What ``nasmlcn train`` was given: the architecture (``lanes`` ... ``weight_sharing``),
    the data, the training (``TrainConfig``), where it runs and what it shows."""

    lanes: str | None = option(
        typer.Option(
            None,
            "--lanes",
            help="Lanes in the compact syntax, e.g. '8*mlcn2:4x1' or 'mlcn1:4x2,mlcn2:2x1' "
            f"[default without --arch or --model: {DEFAULT_LANES}].",
        )
    )
    arch: Path | None = option(ARCH)  # noqa: RUF009
    model: str | None = option(
        typer.Option(
            None,
            "--model",
            help="A named architecture, e.g. capsnet or mlcn2-8x4 (see 'nasmlcn models').",
        )
    )
    dataset: str = option(DATASET)
    image_size: str | None = option(IMAGE_SIZE)
    data_dir: Path | None = option(  # noqa: RUF009
        typer.Option(
            None,
            "--data-dir",
            parser=local_file,
            help="Dataset directory [default: $NASMLCN_DATA_DIR or ~/.cache/nasmlcn/data].",
        )
    )
    download: bool = option(
        typer.Option(True, "--download/--no-download", help="Download missing data.")
    )
    epochs: int | None = config_option(TrainConfig, "epochs")
    batch_size: int | None = config_option(TrainConfig, "batch_size")
    lr: float | None = config_option(TrainConfig, "lr")
    lr_policy: str | None = config_option(TrainConfig, "lr_policy")
    batch_policy: str | None = config_option(TrainConfig, "batch_policy")
    augment: str | None = config_option(TrainConfig, "augment")
    routing: str | None = option(
        typer.Option(None, "--routing", help=f"Lane routing: {one_of(ROUTINGS)}.")
    )
    decoder: str | None = option(
        typer.Option(None, "--decoder", help=f"Decoder: {one_of(DECODERS)}.")
    )
    lane_dropout: float | None = option(
        typer.Option(None, "--lane-dropout", help="Lane dropout probability.")
    )
    vote_init: str | None = option(
        typer.Option(
            None,
            "--vote-init",
            help=f"How an MLCN's vote transforms start: {one_of(VOTE_INITS)} (glorot: the "
            f"reference code's Keras init) [default: {DEFAULT_VOTE_INIT}, or as in --arch].",
        )
    )
    weight_sharing: bool | None = option(
        typer.Option(
            None,
            "--weight-sharing/--no-weight-sharing",
            help="Share each capsule channel's vote transform over its positions (FasTrCaps; "
            "CapsNet 8.2 M -> 6.8 M parameters) [default: off, or as in --arch].",
        )
    )
    train_limit: int | None = option(
        typer.Option(None, "--train-limit", min=1, help="Use N training images.")
    )
    val_limit: int | None = option(
        typer.Option(None, "--val-limit", min=1, help="Use N validation images.")
    )
    test_limit: int | None = option(
        typer.Option(None, "--test-limit", min=1, help="Use N test images.")
    )
    seed: int | None = config_option(TrainConfig, "seed")
    run_on: str = option(
        typer.Option(
            "auto",
            "--run-on",
            help="Where training runs: auto, cpu, cuda or cuda:N. With --devices also "
            "cuda:0,cuda:1,... (target device j runs on entry j mod n).",
        )
    )
    devices: str | None = option(
        typer.Option(
            None,
            "--devices",
            help="Lane-parallel: target devices, as in search, e.g. 2xH100 or 1xK80,1xV100: "
            "the lanes are placed as for them, and each one's lanes run on a local device "
            "(--run-on; auto: the matching GPUs). 2xcpu is legal in one process but gives "
            "no speedup: use --processes for CPU parallelism.",
        )
    )
    device_file: Path | None = option(DEVICE_FILE)  # noqa: RUF009
    placement: str = option(
        typer.Option("greedy", "--placement", help=f"Lane placement: {one_of(PLACERS)}.")
    )
    processes: int = option(
        typer.Option(
            1,
            "--processes",
            min=1,
            help="Train with N local processes (gloo on CPU, one GPU each with NCCL); "
            "for several nodes run 'torchrun ... -m nasmlcn train' instead.",
        )
    )
    parallelism: str = option(
        typer.Option(
            "lanes",
            "--parallelism",
            help="With several processes: lanes (each owns some lanes) or data (DDP baseline).",
        )
    )
    rank_timeout: float = option(
        typer.Option(
            300.0,
            "--rank-timeout",
            min=1.0,
            help="Seconds a multi-process rank waits for its peers before failing.",
        )
    )
    fuse_lanes: bool | None = config_option(TrainConfig, "fuse_lanes")
    cuda_graphs: bool | None = config_option(TrainConfig, "cuda_graphs")
    out_dir: Path | None = option(  # noqa: RUF009
        typer.Option(
            None,
            "--out",
            parser=local_file,
            help="Output directory for checkpoint.pt, arch.json, result.json "
            "[default: runs/<time>].",
        )
    )
    resume: bool = option(typer.Option(False, "--resume", help="Continue the checkpoint in --out."))
    as_json: bool = option(JSON)
    quiet: bool = option(QUIET)

    def arch_spec(self) -> ArchSpec:
        """The architecture of ``--lanes``, ``--arch`` or ``--model``, fitted to the
        dataset, with the architecture options applied."""
        from nasmlcn.data import images_too_small_hint
        from nasmlcn.training import resolve_arch

        data = self.data
        with images_too_small_hint(data):
            return resolve_arch(
                data,
                lanes=self.lanes,
                arch=self.arch,
                model=self.model,
                routing=self.routing,
                decoder=self.decoder,
                lane_dropout=self.lane_dropout,
                weight_sharing=self.weight_sharing,
                vote_init=self.vote_init,
            )

    @functools.cached_property
    def data(self) -> DatasetInfo:
        """The dataset of ``--dataset`` (a user's images read once, into the cache;
        opened once per command: a large folder's fingerprint walks every file)."""
        from nasmlcn.data import open_dataset

        return open_dataset(self.dataset, image_size=self.image_size, data_dir=self.data_dir)

    def config(self) -> TrainConfig:
        """The training's configuration: the settings given (the others
        ``TrainConfig``'s defaults; no ``--lr-policy``: the batch policy's own), run
        where ``--run-on`` says."""
        return TrainConfig(device=self.run_on, **given_settings(self))

    def job(self) -> TrainJob:
        """The job: the architecture, the data, the configuration and the output
        folder (``--out``, else ``runs/train-<time>-<dataset>``)."""
        from nasmlcn.training import TrainJob

        config, spec = self.config(), self.arch_spec()  # the options' errors first
        PLACERS.get(self.placement)  # a typo is refused where no placement runs too
        out_dir = self.out_dir
        self._check_something_to_resume()
        if out_dir is None:
            name = self.data.identity.name.replace("/", "-")
            out_dir = Path("runs") / time.strftime(f"train-%Y%m%d-%H%M%S-{name}")
        return TrainJob(
            spec,
            dataset=self.dataset,
            config=config,
            data_dir=str(self.data_dir) if self.data_dir else None,
            download=self.download,
            train_limit=self.train_limit,
            val_limit=self.val_limit,
            test_limit=self.test_limit,
            out_dir=str(out_dir),
            resume=self.resume,
            data=self.data,  # opened once: the job asks nothing of --dataset again
        )

    def _check_something_to_resume(self) -> None:
        """``--resume`` continues a run: with no checkpoint in ``--out`` (a typo in
        the folder) it would train a new model from scratch without a word."""
        from nasmlcn.errors import CheckpointError
        from nasmlcn.training import CHECKPOINT_NAME

        if not self.resume:
            return
        if self.out_dir is None:
            raise CheckpointError("--resume continues the run in --out; give --out RUN")
        if not (self.out_dir / CHECKPOINT_NAME).is_file():
            raise CheckpointError(
                f"--resume: no {CHECKPOINT_NAME} in {str(self.out_dir)!r} to continue; give "
                "the --out of the run to continue, or drop --resume to start a new one"
            )

    def parallel(self) -> dict[str, Any]:
        """Where the job trains: ``nasmlcn.training.train``'s keyword arguments."""
        return {
            "devices": self._target_devices(),
            "placement": self.placement,
            "processes": self.processes,
            "parallelism": self.parallelism,
            "device": self.run_on,
            "timeout_s": self.rank_timeout,
        }

    def _target_devices(self) -> str | tuple[DeviceSpec, ...] | None:
        """``--devices``, read with ``--device-file``'s kinds where one is given."""
        if self.device_file is None:
            return self.devices
        from nasmlcn.errors import DeviceError
        from nasmlcn.hardware import load_catalog, parse_devices

        if self.devices is None:
            raise DeviceError(
                "--device-file gives the kinds that --devices names; give --devices too "
                "(e.g. --devices 2xMYGPU)"
            )
        return parse_devices(self.devices, catalog=load_catalog(str(self.device_file)))


def title(job: TrainJob, data: DatasetInfo) -> str:
    """The progress display's title: the model, the data, epochs and batch, and a
    batch policy or an augmentation that is not the default."""
    config = job.config
    text = (
        f"training {job.arch.describe()} on {data.identity.name}, {counted(config.epochs, 'epoch')}, "
        f"batch {config.batch_size}"
    )
    if config.batch_policy != "fixed":
        text += f" ({config.batch_policy}, lr {config.lr_policy})"
    if config.augment != "none":
        text += f", augment {config.augment}"
    return text
