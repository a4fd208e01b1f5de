"""A study name no study has: ``search --study tex22 --trials 8`` (meant ``tex2``) ran
a default Fashion-MNIST search for 8 K80s, silent for 75 s. Such a name, with nothing
that defines a search, is refused with "did you mean"; a new study on defaults names
them in its first line, and the data gets a ``data:`` line, built-in data too."""

from __future__ import annotations

from pathlib import Path

from nasmlcn.study import list_studies
from tests.conftest import run_cli

PROXY = ("--evaluator", "proxy", "--trials", "1")


def test_a_mistyped_study_name_is_refused_not_searched(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    made = run_cli("search", "--study", "tex2", "--storage", url, *PROXY, "--devices", "1xK80")
    assert made.returncode == 0, made.stderr
    typo = run_cli("search", "--study", "tex22", "--storage", url, "--trials", "8")
    assert typo.returncode == 2
    assert typo.stderr.count("\n") == 1, typo.stderr
    assert "no study 'tex22'" in typo.stderr
    assert "did you mean 'tex2'?" in typo.stderr
    assert "--devices" in typo.stderr, "it says how to start a new study"
    assert [s.name for s in list_studies(url)] == ["tex2"], "nothing was made"
    # the right name continues the study; a name with the options of a search is new
    again = run_cli("search", "--study", "tex2", "--storage", url, "--trials", "2")
    assert again.returncode == 0, again.stderr
    assert "continuing study 'tex2'" in again.stderr
    assert "on defaults" not in again.stderr


def test_a_new_study_on_defaults_names_them_first(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    new = run_cli("search", "--study", "n", "--storage", url, *PROXY, "--epochs", "2")
    assert new.returncode == 0, new.stderr
    first, second, third = new.stderr.splitlines()[:3]
    assert first.startswith("new study 'n' on defaults: data fashion-mnist, devices 8xK80")
    assert "epochs" not in first.split("(")[0], "--epochs was given"
    assert "(give --dataset, --devices to choose)" in first
    assert second.startswith("new study 'n' (1 trial)")
    assert third.startswith("data: fashion-mnist (built-in): Zalando Fashion-MNIST")
    chosen = ("--dataset", "fashion-mnist", "--devices", "1xK80", "--epochs", "1")
    given = run_cli("search", "--study", "m", "--storage", url, *PROXY, *chosen)
    assert given.returncode == 0, given.stderr
    assert "on defaults" not in given.stderr
    assert "data: fashion-mnist (built-in)" in given.stderr
