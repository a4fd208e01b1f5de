"""What a search says before its first trial: a ``--mem`` above the device catalog's
(planned for as asked: a what-if may be meant) and a ``--train-limit`` or
``--val-limit`` above the images the data has (lowered, and stored as lowered).
Both ran in silence: ``--val-limit 70000`` used 6,000 images and the study stored
70000; ``--mem 100GB`` on a 12 GiB K80 was stored for both devices without a word."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nasmlcn.data import DATASETS, load_splits
from nasmlcn.search import SearchConfig, setup_search
from nasmlcn.study import load_existing_study, study_info
from tests.conftest import run_cli


def _config(**options: object) -> SearchConfig:
    settings: dict[str, object] = {
        "devices": "2xK80",
        "mem": "12GB",
        "dataset": "synthetic",
        "evaluator": "proxy",
    }
    return SearchConfig(**{**settings, **options})  # type: ignore[arg-type]


def test_limits_above_the_data_are_lowered_to_it_and_said() -> None:
    setup = setup_search(_config(train_limit=100_000, val_limit=70_000))
    assert (setup.config.train_limit, setup.config.val_limit) == (1_800, 200)
    assert [n.split(" is above")[0] for n in setup.notices] == [
        "\u2039train_limit\u203a 100,000",
        "\u2039val_limit\u203a 70,000",
    ]
    assert "the trials use 1,800, and the study stores 1,800" in setup.notices[0]


def test_limits_within_the_data_and_the_catalog_s_memory_say_nothing() -> None:
    setup = setup_search(_config(train_limit=1_800, val_limit=200))
    assert setup.notices == ()
    assert (setup.config.train_limit, setup.config.val_limit) == (1_800, 200)


def test_a_mem_above_the_catalog_is_planned_for_and_said_once_a_kind() -> None:
    setup = setup_search(_config(devices="2xK80,1xM40", mem="100GB"))
    assert {d.memory_bytes for d in setup.devices} == {100 * 10**9}  # as asked
    assert len(setup.notices) == 2
    assert setup.notices[0].startswith("\u2039mem\u203a 100GB is above the 12 GiB of a K80")
    assert "of a M40" in setup.notices[1]


@pytest.mark.parametrize("name", ["synthetic", "fashion-mnist"])
def test_the_split_sizes_known_up_front_are_those_the_splits_have(
    name: str, data_dir: Path
) -> None:
    info = DATASETS.get(name)
    splits = load_splits(info, data_dir, download=False, seed=0)
    assert info.split_sizes() == (len(splits.train.labels), len(splits.val.labels))
    assert info.images is not None
    assert info.images[1] == len(splits.test.labels)


def test_the_cli_warns_even_when_quiet_and_the_study_stores_what_was_used(
    tmp_path: Path,
) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    command = (
        *("search", "--evaluator", "proxy", "--dataset", "synthetic", "--devices", "1xK80"),
        *("--mem", "64GB", "--val-limit", "70000", "--study", "n"),
        *("--storage", storage, "-q", "--json"),
    )
    result = run_cli(*command, "--trials", "1")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: --mem 64GB is above the 12 GiB of a K80 in the device catalog: the search "
        "plans for 59.6 GiB a device, as asked (leave --mem out for the catalog's)",
        "warning: --val-limit 70,000 is above the 200 images of synthetic's validation split: "
        "the trials use 200, and the study stores 200",
    ]
    assert [n[:22] for n in json.loads(result.stdout)["notices"]] == [
        "mem 64GB is above the ",
        "val_limit 70,000 is ab",
    ]
    assert study_info(load_existing_study("n", storage))["config"]["val_limit"] == 200
    # the same command again continues the study (its identity is what was used)
    again = run_cli(*command, "--trials", "2")
    assert again.returncode == 0, again.stderr
    assert len(load_existing_study("n", storage).trials) == 2
