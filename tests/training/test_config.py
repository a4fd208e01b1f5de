"""``TrainConfig``'s settings: each field's range written once (its metadata) and
checked with an error that names the field, and the lr policy of a run that names
none decided in one place, the config itself (the batch policy's own)."""

from __future__ import annotations

import dataclasses
import json
import pickle
from typing import Any

import pytest

from nasmlcn.errors import SpecError
from nasmlcn.training import DEFAULT_LR_POLICY, TrainConfig, default_lr_policy


@pytest.mark.parametrize(
    ("batch_policy", "lr_policy"),
    [("fixed", DEFAULT_LR_POLICY), ("adabatch", "one-cycle"), ("warmadabatch", "phase-restarts")],
)
def test_no_lr_policy_is_the_batch_policy_s_own(batch_policy: str, lr_policy: str) -> None:
    for config in (
        TrainConfig(batch_policy=batch_policy),
        TrainConfig(lr_policy=None, batch_policy=batch_policy),
    ):
        assert config.lr_policy == lr_policy == default_lr_policy(batch_policy)
        assert config.to_dict()["lr_policy"] == lr_policy  # what a checkpoint stores


def test_a_given_lr_policy_is_kept() -> None:
    config = TrainConfig(batch_policy="warmadabatch", lr_policy="fixed")
    assert config.lr_policy == "fixed"
    assert TrainConfig().lr_policy == "one-cycle"


def test_a_config_reads_back_as_it_was_stored() -> None:
    config = TrainConfig(batch_policy="warmadabatch", epochs=4)
    assert TrainConfig(**config.to_dict()) == config
    assert pickle.loads(pickle.dumps(config)) == config  # what a spawned rank gets
    assert dataclasses.replace(config, epochs=5).lr_policy == "phase-restarts"
    assert dataclasses.replace(config, lr_policy=None, batch_policy="fixed").lr_policy == (
        "one-cycle"
    )
    assert "lr_policy='phase-restarts'" in repr(config)
    assert json.loads(json.dumps(config.to_dict()))["lr_policy"] == "phase-restarts"
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.lr_policy = "fixed"  # type: ignore[misc]


def test_replace_with_another_batch_policy_takes_its_own_lr_policy() -> None:
    """A policy that was not given follows the batch policy through ``replace``; one
    that was given stays."""
    own = TrainConfig(batch_policy="warmadabatch")
    assert dataclasses.replace(own, batch_policy="fixed").lr_policy == "one-cycle"
    back = dataclasses.replace(
        dataclasses.replace(own, batch_policy="fixed"), batch_policy="warmadabatch"
    )
    assert back.lr_policy == "phase-restarts"
    assert pickle.loads(pickle.dumps(own)).lr_policy == "phase-restarts"
    given = TrainConfig(batch_policy="warmadabatch", lr_policy="phase-restarts")
    assert dataclasses.replace(given, batch_policy="fixed").lr_policy == "phase-restarts"
    assert given == own  # the same training: equal, whichever way the name came


@pytest.mark.parametrize(
    ("kwargs", "message", "cli"),
    [
        ({"epochs": 0}, "epochs must be an integer >= 1, got 0", "--epochs"),
        (
            {"epochs": 200_000},
            "epochs must be at most 100,000 (the thesis trains 10 to 100), got 200,000",
            "--epochs",
        ),
        ({"seed": -1}, "seed must be an integer >= 0, got -1", "--seed"),
        ({"lr": float("inf")}, "lr must be a finite number > 0, got inf", "--lr"),
        ({"lr_decay": 0}, "lr_decay must be a number > 0, got 0", "--lr-decay"),
        ({"eval_batch_size": 0}, "eval_batch_size must be an integer >= 1", "--eval-batch-size"),
        (
            {"lr_policy": "cosine"},
            "lr_policy: unknown learning-rate policy 'cosine'",
            "--lr-policy",
        ),
        ({"batch_policy": "adabach"}, "batch_policy: unknown batch-size policy", "--batch-policy"),
        ({"fuse_lanes": 1}, "fuse_lanes must be true or false, got 1", "--fuse-lanes"),
    ],
)
def test_a_bad_value_is_refused_naming_its_field(
    kwargs: dict[str, Any], message: str, cli: str
) -> None:
    with pytest.raises(SpecError) as refused:
        TrainConfig(**kwargs)
    assert str(refused.value).startswith(message)
    assert refused.value.for_cli().startswith(cli)  # the CLI names the option


def test_every_field_is_a_setting() -> None:
    """Each field's help is in its metadata (the docstring does not repeat it)."""
    for item in dataclasses.fields(TrainConfig):
        assert item.metadata.get("help"), item.name
        assert f"{item.name}:" not in (TrainConfig.__doc__ or ""), item.name
