"""Every option that takes a registry name lists that registry's names in its help:
a new entry must show up in ``--help`` (search registries import Optuna, so the
search command's texts are written out; this test keeps them in step)."""

from __future__ import annotations

import pytest
import typer.main

from nasmlcn.cli import app
from nasmlcn.costs import COST_MODELS, TARGETS
from nasmlcn.placement import PLACERS
from nasmlcn.runs import EXPORT_FORMATS
from nasmlcn.search import EVALUATORS, OBJECTIVES, SAMPLERS
from nasmlcn.specs import DECODERS, ROUTINGS
from nasmlcn.training import AUGMENTATIONS, BATCH_POLICIES, LR_POLICIES

CASES = [
    ("search", "--sampler", SAMPLERS),
    ("search", "--evaluator", EVALUATORS),
    ("search", "--objectives", OBJECTIVES),
    ("search", "--cost-model", COST_MODELS),
    ("plan", "--strategy", PLACERS),
    ("plan", "--cost-model", COST_MODELS),
    ("train", "--placement", PLACERS),
    ("train", "--routing", ROUTINGS),
    ("train", "--decoder", DECODERS),
    ("train", "--lr-policy", LR_POLICIES),
    ("train", "--augment", AUGMENTATIONS),
    ("train", "--batch-policy", BATCH_POLICIES),
    ("estimate", "--target", TARGETS),
    ("export-model", "--format", EXPORT_FORMATS),
]


def _help(command: str, option: str) -> str:
    group = typer.main.get_command(app)
    cmd = group.commands[command]  # type: ignore[attr-defined]
    (param,) = [p for p in cmd.params if option in getattr(p, "opts", ())]
    return str(getattr(param, "help", ""))


@pytest.mark.parametrize(("command", "option", "names"), CASES)
def test_help_lists_every_registered_name(command: str, option: str, names: object) -> None:
    text = _help(command, option)
    missing = [n for n in names if n not in text]  # type: ignore[attr-defined]
    assert not missing, f"{command} {option} help does not name {missing}: {text!r}"
