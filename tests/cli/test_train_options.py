"""``nasmlcn train``'s training settings are ``TrainConfig``'s own fields' options: a
field's default and help are written once, in ``TrainConfig``, and the command says
that default and checks a value as ``TrainConfig`` does, naming the option."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import typer.main

from nasmlcn.cli import app
from nasmlcn.cli._config_options import help_text
from nasmlcn.cli._train_options import TrainOptions
from nasmlcn.training import TrainConfig
from tests.conftest import run_cli

CONFIG_FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}
SETTINGS = [f for f in dataclasses.fields(TrainOptions) if "setting" in f.metadata]


def _params() -> dict[str, Any]:
    command = typer.main.get_command(app).commands["train"]  # type: ignore[attr-defined]
    return {p.name: p for p in command.params}


def test_every_train_option_named_as_a_config_field_is_that_field_s() -> None:
    """An option spelled as a ``TrainConfig`` field is made from it (no second
    default); ``--run-on`` sets ``device`` and where the ranks run."""
    names = {f.name for f in dataclasses.fields(TrainOptions)}
    assert {f.metadata["setting"] for f in SETTINGS} == names & CONFIG_FIELDS.keys()
    assert len(SETTINGS) >= 9


@pytest.mark.parametrize("item", SETTINGS, ids=lambda f: f.name)
def test_an_option_says_its_config_field_s_default_and_help(item: dataclasses.Field[Any]) -> None:
    field = CONFIG_FIELDS[item.metadata["setting"]]
    param = _params()[item.name]
    assert param.default is None  # not given: TrainConfig's default holds
    assert param.help == help_text(field)
    shown = field.metadata["shown_default"] or str(field.default)
    assert f"[default: {shown}]" in param.help
    if field.metadata["range"] is not None:
        assert f"({field.metadata['range'].stated()})" in param.help


def test_the_command_s_defaults_are_the_config_s() -> None:
    """Nothing given: the configuration is ``TrainConfig``'s default, run where
    ``--run-on`` says, and ``--help`` says each default."""
    assert TrainOptions().config() == TrainConfig(device="auto")
    command = typer.main.get_command(app).commands["train"]  # type: ignore[attr-defined]
    ctx = command.context_class(command, info_name="train")
    for item in SETTINGS:
        record = _params()[item.name].get_help_record(ctx)  # a line of --help
        default = CONFIG_FIELDS[item.name].default
        value = {True: "on", False: "off"}.get(default) if isinstance(default, bool) else None
        value = value or (f"{default:g}" if isinstance(default, float) else str(default))
        if item.name == "lr_policy":
            value = f"{TrainConfig().lr_policy}; with --batch-policy warmadabatch: phase-restarts"
        assert f"[default: {value}]" in record[1], (item.name, record)


def test_options_given_reach_the_config() -> None:
    options = TrainOptions(
        epochs=3, lr_policy=None, batch_policy="warmadabatch", fuse_lanes=False, seed=2
    )
    config = options.config()
    assert (config.epochs, config.seed, config.fuse_lanes) == (3, 2, False)
    assert config.lr_policy == "phase-restarts"  # the batch policy's own
    assert TrainOptions(lr_policy="fixed", batch_policy="warmadabatch").config().lr_policy == (
        "fixed"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--epochs", "0"), "--epochs must be an integer >= 1, got 0"),
        (("--batch-size", "-1"), "--batch-size must be an integer >= 1, got -1"),
        (("--lr", "0"), "--lr must be a number > 0, got 0.0"),
        (("--seed", "-1"), "--seed must be an integer >= 0, got -1"),
        (
            ("--lr-policy", "cosine"),
            "--lr-policy: unknown learning-rate policy 'cosine'; choose one of: exponential",
        ),
        (("--batch-policy", "adabach"), "--batch-policy: unknown batch-size policy 'adabach'"),
        (("--augment", "flip"), "--augment: unknown augmentation 'flip'; choose one of: crop"),
    ],
)
def test_a_bad_setting_is_one_line_naming_the_option(args: tuple[str, ...], message: str) -> None:
    result = run_cli("train", "--lanes", "mlcn1:1x1", *args)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines == [f"error: {lines[0][len('error: ') :]}"], result.stderr
    assert message in lines[0]
