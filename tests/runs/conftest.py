"""Run folders for the tests: trained ones (``nasmlcn train``'s library call) and
ones written directly from a freshly built model (faster, same files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import torch

from nasmlcn.models import build_model
from nasmlcn.specs import ArchSpec, MLCNSpec, save_arch
from nasmlcn.training import TrainConfig, TrainJob, save_checkpoint, train

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from nasmlcn.data import DataIdentity

TINY_MLCN = "mlcn1:1x1,mlcn2:1x1"


def write_run(
    folder: Path,
    arch: ArchSpec,
    *,
    dataset: str | None = "fashion-mnist",
    seed: int = 3,
    recorded: DataIdentity | None = None,
) -> torch.nn.Module:
    """A run folder as ``nasmlcn train --out`` lays it out, holding the seeded
    initial weights of ``arch``; without ``dataset``, as ``best --export`` (no
    ``result.json``), its checkpoint's training configuration naming the study's
    data where it is ``recorded``, as ``best --export`` writes it. Returns the model
    written."""
    torch.manual_seed(seed)
    model = build_model(arch)
    folder.mkdir(parents=True, exist_ok=True)
    save_checkpoint(
        folder / "checkpoint.pt",
        arch=arch,
        model=model,
        epoch=1,
        train_config={**TrainConfig(seed=seed).to_dict(), **_data_record(recorded)},
    )
    save_arch(arch, folder / "arch.json")
    if dataset is not None:
        (folder / "result.json").write_text(json.dumps({"dataset": dataset}))
    return model


def _data_record(identity: DataIdentity | None) -> dict[str, Any]:
    """What ``best --export`` adds to a trial's training configuration: its study's
    data (none where ``identity`` is None)."""
    if identity is None:
        return {}
    return {
        "dataset": identity.source or identity.name,
        "image_size": identity.image_size,
        "dataset_identity": identity.to_dict(),
    }


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny MLCN trained for one epoch on the synthetic dataset by ``train``."""
    out = tmp_path_factory.mktemp("trained") / "run"
    train(
        TrainJob(
            MLCNSpec(TINY_MLCN),
            dataset="synthetic",
            config=TrainConfig(epochs=1, seed=2, batch_size=50),
            train_limit=200,
            val_limit=100,
            test_limit=120,
            out_dir=str(out),
        )
    )
    return out


def html_figure(page: Path) -> go.Figure:
    """The figure a page written by plotly's ``write_html`` draws: its
    ``Plotly.newPlot`` call's traces and layout, as a user's browser gets them."""
    import plotly.graph_objects as go

    text = page.read_text()
    decoder = json.JSONDecoder()
    at = text.index("Plotly.newPlot(") + len("Plotly.newPlot(")
    arguments = []
    for _ in range(3):  # the element's id, the traces, the layout
        while text[at] in " \t\n,":
            at += 1
        value, at = decoder.raw_decode(text, at)
        arguments.append(value)
    _, data, layout = arguments
    return go.Figure(data=data, layout=layout)
