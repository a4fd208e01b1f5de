"""Options shared by several commands (devices, cost models, architectures, storage,
studies, trained runs, where the work runs)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from nasmlcn._storage_url import STORAGE_HELP
from nasmlcn.costs import COST_MODELS

if TYPE_CHECKING:
    from nasmlcn.costs import CostModel
    from nasmlcn.specs import MLCNSpec


def one_of(names: Iterable[str]) -> str:
    """``a, b or c``: a registry's names for a help text (read from the registry, so a
    new entry shows up in ``--help`` by itself)."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def local_file(value: str | Path) -> Path:
    """A local path; a URL is refused as it is (``Path`` would fold ``https://x/a.json``
    into the missing file ``https:/x/a.json``), and so is an empty one (``Path("")``
    is the current folder: ``--out ''`` would write there)."""
    if isinstance(value, Path):
        return value
    if not value.strip():
        raise typer.BadParameter(f"{value!r} is an empty path; give a file or folder")
    if _URL.match(value):
        raise typer.BadParameter(
            f"{value!r} is a URL; only local files are read: download it and give its path"
        )
    return Path(value)


ARCH = typer.Option(
    None, "--arch", help="Architecture JSON file.", parser=local_file, metavar="<path>"
)

DEVICE_FILE = typer.Option(
    None,
    "--device-file",
    parser=local_file,
    help="A TOML device catalog that extends the built-in one.",
)
COST_MODEL = typer.Option("analytic", "--cost-model", help=f"Cost model: {one_of(COST_MODELS)}.")
CALIBRATION = typer.Option(
    None,
    "--calibration",
    parser=local_file,
    help="Calibration file of the calibrated cost model [default: $NASMLCN_CALIBRATION or "
    "~/.cache/nasmlcn/calibration.json].",
)

STORAGE = typer.Option(None, "--storage", help=STORAGE_HELP, show_default=False)
STUDY = typer.Option(None, "--study", help="Study name [default: the only study in the storage].")

RUN = typer.Option(
    ...,
    "--run",
    parser=local_file,
    help="A run folder: what nasmlcn train --out, nasmlcn best --export or nasmlcn "
    "remove-lanes --keep wrote (checkpoint.pt, arch.json).",
)
DATASET = typer.Option(
    "fashion-mnist",
    "--dataset",
    help="A built-in dataset (see 'nasmlcn data list'), or your own images: a folder of "
    "class folders (PNG, JPEG, BMP; optionally in train/ and test/) or an .npz with x_train, "
    "y_train [, x_test, y_test] (see 'nasmlcn data inspect PATH').",
)
IMAGE_SIZE = typer.Option(
    None,
    "--image-size",
    help="Resize your own images to N or HxW pixels (bilinear, stretched: the aspect ratio "
    "is not kept) [default: as they are; needed when their sizes differ].",
)
RUN_DATASET = typer.Option(
    None,
    "--dataset",
    help="Use this dataset: a built-in name or the path of your own images [default: the "
    "run's, from its result.json or checkpoint].",
)
RUN_IMAGE_SIZE = typer.Option(
    None,
    "--image-size",
    help="With --dataset PATH: resize those images to N or HxW [default: the run's].",
)
DATA_DIR = typer.Option(
    None,
    "--data-dir",
    parser=local_file,
    help="Dataset directory [default: $NASMLCN_DATA_DIR or ~/.cache/nasmlcn/data].",
)
RUN_ON = typer.Option(
    "auto", "--run-on", help="The local device it runs on: auto, cpu, cuda or cuda:N."
)
"""Where the work runs on this machine: one word in every command (``search``'s
``--run-on`` is SearchConfig.run_on)."""
JSON = typer.Option(False, "--json", help="Print one JSON object on stdout.")
QUIET = typer.Option(False, "--quiet", "-q", help="No progress display.")
INFERENCE_BATCH = typer.Option(
    100, "--inference-batch", min=1, help="Images per timed inference pass."
)


def replace_option(what: str) -> Any:
    """``--replace``: write over ``what`` ("the file") where it exists; without it an
    existing file is refused, naming the file and this option (one word, one meaning,
    in every command that writes a file a user keeps). ``Any``, as ``typer.Option``
    is: it stands as the default of a ``bool`` parameter."""
    return typer.Option(
        False, "--replace", help=f"Write over {what} if it exists [default: refuse]."
    )


def cost_model_from_options(name: str, calibration: Path | None) -> CostModel:
    """The cost model ``name``; ``--calibration`` only goes with ``calibrated``."""
    from nasmlcn.costs import get_cost_model
    from nasmlcn.errors import SpecError

    if calibration is not None and name != "calibrated":
        raise SpecError(f"--calibration applies to --cost-model calibrated, not {name!r}")
    options = {"calibration_file": str(calibration)} if calibration is not None else {}
    return get_cost_model(name, **options)


def mlcn_from_options(lanes: str | None, arch: Path | None) -> MLCNSpec:
    """The MLCN of ``--lanes`` or ``--arch`` (exactly one)."""
    from nasmlcn.errors import SpecError
    from nasmlcn.specs import MLCNSpec, load_arch

    if (lanes is None) == (arch is None):
        raise SpecError("give exactly one of --lanes or --arch")
    if arch is not None:
        spec = load_arch(arch)
        if not isinstance(spec, MLCNSpec):
            raise SpecError(
                f"{str(arch)!r} is a {spec.kind} architecture; plans need an MLCN (lanes)"
            )
        return spec
    assert lanes is not None
    return MLCNSpec.from_lanes(lanes)


def format_time(value: float, unit: str) -> str:
    """Seconds as ms (``12.9 ms``); other units as plain numbers."""
    if unit == "s":
        return f"{value * 1e3:.3g} ms"
    return f"{value:.4g} {unit}"
