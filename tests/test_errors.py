"""Errors name configuration fields for library users and options for the CLI."""

from __future__ import annotations

import ast
import pickle
import re
from pathlib import Path

import pytest

from nasmlcn.errors import SearchError, SpecError, cli_option, option
from nasmlcn.search import RetrainOptions, SearchConfig
from tests.conftest import run_cli


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


# Options of other programs, and a command (not a field) that a message points to.
NOT_OURS = {"--nproc-per-node": "torchrun's", "--list": "the command nasmlcn reproduce --list"}


def _makes_an_error(node: ast.AST) -> bool:
    """``SomeError(...)``: an error made to be raised elsewhere (``does_not_fit``)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return str(name).endswith("Error")


def test_no_library_error_spells_a_command_line_option() -> None:
    """A library error names a field with option(); a literal ``--flag`` showed a
    library caller an option it never typed (the command lines themselves, cli/ and
    the reproduce engines, spell theirs)."""
    package = Path(__file__).resolve().parent.parent / "nasmlcn"
    flag = re.compile(r"--[a-z][a-z-]+")
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith(("cli/", "reproduce/engines/")):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Raise) and node.exc) and not _makes_an_error(node):
                continue
            for part in ast.walk(node):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    found += [f"{relative}:{part.lineno} {f}" for f in flag.findall(part.value)]
    assert [f for f in found if f.split()[-1] not in NOT_OURS] == []


def test_the_cli_shows_each_field_as_the_option_that_sets_it(tmp_path: Path) -> None:
    """Fields whose option has another name (``out_dir`` is ``--out``, the library's
    ``device`` is ``--run-on``) come out as that option, not ``--out-dir``."""
    from nasmlcn.errors import CheckpointError
    from nasmlcn.specs import MLCNSpec
    from nasmlcn.training import TrainJob, train

    run = tmp_path / "run"
    run.mkdir()
    (run / "checkpoint.pt").touch()  # another run's
    arch = MLCNSpec.from_lanes("2*mlcn2:1x1")
    with pytest.raises(CheckpointError) as held:
        train(TrainJob(arch, dataset="synthetic", out_dir=str(run)))
    assert str(held.value).endswith("pass resume to continue it or choose another out_dir")
    with pytest.raises(SpecError) as err:
        train(TrainJob(arch), processes=2, device="cuda:0")
    assert str(err.value).startswith("device 'cuda:0': with several processes")

    held_cli = run_cli("train", "--dataset", "synthetic", "--epochs", "1", "--out", str(run))
    assert held_cli.returncode == 2
    assert held_cli.stderr.rstrip().endswith("pass --resume to continue it or choose another --out")
    run_on = run_cli("train", "--processes", "2", "--run-on", "cuda:0")
    assert run_on.returncode == 2
    assert run_on.stderr.startswith("error: --run-on 'cuda:0': with several processes")


def test_an_error_inside_another_keeps_the_fields_it_names(tmp_path: Path) -> None:
    """An error put inside another's message was put there as ``str()``, its fields
    spelled out already: the CLI showed 'name the study's with storage' where it
    shows '--storage' for the outer error's own fields."""
    from nasmlcn.errors import StorageError, nested

    inner = StorageError(f"no such file; name it with {option('storage')}")
    outer = SearchError(f"{option('warm_start')} 's': {nested(inner)}")
    assert str(outer) == "warm_start 's': no such file; name it with storage"
    assert outer.for_cli() == "--warm-start 's': no such file; name it with --storage"
    assert nested(ValueError("plain")) == "plain"

    done = run_cli(
        *("search", "--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB"),
        *("--storage", f"sqlite:///{tmp_path / 's.db'}", "--warm-start", "nosuch"),
    )
    assert done.returncode == 2
    assert "name the study's with --storage or $NASMLCN_STORAGE" in done.stderr


def _nasmlcn_errors(handler: ast.ExceptHandler) -> bool:
    """Whether ``except ... as name`` catches one of nasmlcn's errors."""
    import nasmlcn.errors

    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for kind in kinds:
        cls = getattr(nasmlcn.errors, getattr(kind, "id", ""), None)
        if isinstance(cls, type) and issubclass(cls, nasmlcn.errors.NasmlcnError):
            return True
    return False


def test_every_error_put_inside_another_goes_through_nested() -> None:
    """``raise XError(f"...{err}")`` in an ``except SomeNasmlcnError as err`` spells
    ``err``'s fields as fields, which the CLI then cannot show as options."""
    package = Path(__file__).resolve().parent.parent / "nasmlcn"
    found = []
    for path in sorted(package.rglob("*.py")):
        for handler in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(handler, ast.ExceptHandler) and handler.name):
                continue
            if handler.type is None or not _nasmlcn_errors(handler):
                continue
            for node in ast.walk(handler):
                if not (isinstance(node, ast.Raise) and node.exc and _makes_an_error(node.exc)):
                    continue
                for part in ast.walk(node.exc):
                    value = getattr(part, "value", None)
                    named = isinstance(value, ast.Name) and value.id == handler.name
                    if isinstance(part, ast.FormattedValue) and named:
                        found.append(f"{path.relative_to(package)}:{part.lineno}")
    assert found == []
