"""Errors name configuration fields for library users and options for the CLI."""

from __future__ import annotations

import pickle

import pytest

from nasmlcn.errors import SearchError, cli_option, option
from nasmlcn.search import RetrainOptions, SearchConfig


def test_an_error_names_the_field_and_the_cli_the_option() -> None:
    err = SearchError(f"{option('keep_weights')} 'x': use all; see {option('run_on')}")
    assert str(err) == "keep_weights 'x': use all; see run_on"
    assert err.for_cli() == "--keep-weights 'x': use all; see --run-on"
    assert err.for_cli({"run_on": "--on"}) == "--keep-weights 'x': use all; see --on"
    assert cli_option("gpus_per_trial") == "--gpus-per-trial"
    # a pickled error (a worker process's) keeps both readings
    again = pickle.loads(pickle.dumps(err))
    assert (str(again), again.for_cli()) == (str(err), err.for_cli())


def test_library_errors_name_fields_not_flags() -> None:
    with pytest.raises(SearchError) as err:
        SearchConfig(keep_weights="some")
    assert str(err.value).startswith("keep_weights 'some'")
    assert err.value.for_cli().startswith("--keep-weights 'some'")
    with pytest.raises(SearchError) as err:
        RetrainOptions(pareto=True, top=3)
    assert "--" not in str(err.value)
    assert "--pareto" in err.value.for_cli()
    assert "--top" in err.value.for_cli()


def test_a_config_reads_no_device_catalog() -> None:
    """Device files are read when a search is set up: a config naming one that is not
    there can be made (and fails at setup, naming the file)."""
    from nasmlcn.errors import NasmlcnError
    from nasmlcn.search import setup_search

    config = SearchConfig(devices="1xK80", device_file="/nonexistent/devices.toml")
    with pytest.raises(NasmlcnError, match=r"devices\.toml"):
        setup_search(config)
