"""No database password is ever printed or stored: every command that takes
``--storage``, run as a user would against a real PostgreSQL server.

One role with one unique random password; then the password is looked for in
stdout, stderr and ``--json`` of every command (the search's live display
included), in every error, in every exported file and in every row of every
table of the database.
"""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from tests._postgres import Database, PostgresServer, free_port
from tests.conftest import run_cli

SEARCH = ("search", "--evaluator", "proxy", "--devices", "2xK80", "--mem", "12GB", "--epochs", "2")
LIVE = {"FORCE_COLOR": "1", "COLUMNS": "200"}  # rich draws its live display as on a terminal


@dataclass
class Run:
    """What one command printed."""

    returncode: int
    stdout: str
    stderr: str


@dataclass
class Seen:
    """Everything the commands printed, wrote and stored."""

    db: Database
    shown: str  # the URL as it should appear: postgresql://user:***@127.0.0.1:port/db
    runs: dict[str, Run] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    dump: str = ""

    def texts(self) -> dict[str, str]:
        """Every place a password could show, by name."""
        places = {}
        for name, run in self.runs.items():
            places[f"{name}: stdout"] = run.stdout
            places[f"{name}: stderr"] = run.stderr
        for name, data in self.files.items():
            places[f"export: {name}"] = data.decode("latin-1")
        places["database: pg_dump"] = self.dump
        return places


def _run(*args: str, env: dict[str, str] | None = None) -> Run:
    result = run_cli(*args, env=env, timeout=300)
    return Run(result.returncode, result.stdout, result.stderr)


def _dashboard_start(url: str) -> Run:
    """``nasmlcn dashboard`` until it says where it listens, then Ctrl-C."""
    process = subprocess.Popen(
        [sys.executable, "-m", "nasmlcn", "dashboard", "--storage", url, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    first = process.stdout.readline()  # "optuna-dashboard on http://127.0.0.1:PORT/dashboard"
    process.send_signal(signal.SIGINT)
    try:
        rest, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        rest, stderr = process.communicate()
    return Run(0 if first.startswith("optuna-dashboard on http") else 1, first + rest, stderr)


@pytest.fixture(scope="module")
def seen(postgres: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Seen:
    db = postgres.create_database()
    url = db.url
    result = Seen(db, f"postgresql://{db.user}:***@127.0.0.1:{db.port}/{db.name}")
    result.runs["search"] = _run(*SEARCH, "--trials", "3", "--storage", url, env=LIVE)
    result.runs["search --json"] = _run(*SEARCH, "--trials", "4", "--storage", url, "--json")
    study = json.loads(result.runs["search --json"].stdout)["study"]
    out = tmp_path_factory.mktemp("export")
    wrong = secrets.token_urlsafe(12)
    jobs: dict[str, Callable[[], Run]] = {
        "best": lambda: _run("best", "--storage", url),
        "best --json": lambda: _run("best", "--storage", url, "--json"),
        "best, psycopg2": lambda: _run(
            "best", "--storage", url.replace("postgresql://", "postgresql+psycopg2://"), "--json"
        ),
        "correlate": lambda: _run("correlate", "--storage", url),
        "correlate --json": lambda: _run("correlate", "--storage", url, "--json"),
        "export": lambda: _run(
            "export", "--storage", url, "--out", str(out), "--format", "all", "--json"
        ),
        "dashboard": lambda: _dashboard_start(url),
        "error: wrong password": lambda: _run(
            "best", "--storage", url.replace(quote(db.password, safe=""), wrong)
        ),
        "error: unknown database": lambda: _run(
            "best", "--storage", url.replace(f"/{db.name}", "/nosuchdb")
        ),
        "error: unreachable server": lambda: _run(
            "best", "--storage", url.replace(f":{db.port}/", f":{free_port()}/")
        ),
        "error: no such study": lambda: _run("correlate", "--storage", url, "--study", "nope"),
        "error: search on a closed port": lambda: _run(
            *SEARCH, "--storage", url.replace(f":{db.port}/", f":{free_port()}/"), "-q"
        ),
    }
    result.runs.update({name: job() for name, job in jobs.items()})  # in process: one at a time
    assert wrong not in str(result.runs["error: wrong password"])
    result.files = {
        str(path.relative_to(out)): path.read_bytes() for path in out.rglob("*") if path.is_file()
    }
    result.dump = postgres.dump(db.name)
    assert study in result.dump  # the dump holds the study
    return result


def test_every_command_ran(seen: Seen) -> None:
    for name, run in seen.runs.items():
        if name.startswith("error:"):
            assert run.returncode == 2, (name, run.stderr)
            lines = run.stderr.strip().splitlines()
            assert len(lines) == 1, (name, run.stderr)
            assert lines[0].startswith("error: "), (name, run.stderr)
            assert "Traceback" not in run.stderr
        else:
            assert run.returncode == 0, (name, run.stderr)
    assert "\x1b[?25l" in seen.runs["search"].stderr  # the live display was drawn
    exported = set(seen.files)
    assert {"report.html", "trials.csv", "trials.json"} <= exported
    assert any(f.endswith(".png") for f in exported)
    assert any(f.endswith(".svg") for f in exported)


def test_the_password_is_nowhere(seen: Seen) -> None:
    password = seen.db.password
    forms = {password, quote(password, safe=""), quote_plus(password)}
    leaks = [place for place, text in seen.texts().items() if any(f in text for f in forms)]
    assert leaks == []


def test_the_url_is_shown_with_its_password_hidden(seen: Seen) -> None:
    """Where a command shows the storage, it shows it redacted (so the test above
    looks at the places that used to show the password)."""
    runs = seen.runs
    assert f"in {seen.shown};" in runs["search"].stderr  # the live display's first line
    search = json.loads(runs["search --json"].stdout)
    assert search["storage"] == search["config"]["storage"] == seen.shown
    assert json.loads(runs["best --json"].stdout)["storage"] == seen.shown
    psycopg2 = json.loads(runs["best, psycopg2"].stdout)
    assert psycopg2["storage"] == seen.shown.replace("postgresql://", "postgresql+psycopg2://")
    assert psycopg2["best"] == json.loads(runs["best --json"].stdout)["best"]
    assert f"opened {seen.shown}" in runs["dashboard"].stderr
    assert f"<p>storage: {seen.shown}</p>" in seen.files["report.html"].decode()
    trials = json.loads(seen.files["trials.json"])
    assert trials["nasmlcn"]["config"]["storage"] == seen.shown
    assert seen.shown in seen.dump  # the study's stored configuration
    wrong = runs["error: wrong password"].stderr
    assert f"cannot open storage 'postgresql://{seen.db.user}:***@127.0.0.1:" in wrong
    assert "password authentication failed" in wrong
    assert "does not exist" in runs["error: unknown database"].stderr
    assert "Connection refused" in runs["error: unreachable server"].stderr
    assert "Connection refused" in runs["error: search on a closed port"].stderr
    assert f"no study 'nope' in {seen.shown};" in runs["error: no such study"].stderr


def test_url_encoded_passwords_are_hidden_in_every_form(postgres: PostgresServer) -> None:
    """A password with URL-special characters, written URL-encoded as it must be."""
    password = f"{secrets.token_hex(5)}@%/:?#+ {secrets.token_hex(5)}"
    db = postgres.create_database(password)
    assert quote(password, safe="") in db.url
    search = _run(*SEARCH, "--trials", "2", "--storage", db.url, "--json", env=LIVE)
    best = _run("best", "--storage", db.url, "--json")
    missing = _run("best", "--storage", db.url, "--study", "nope")
    assert search.returncode == best.returncode == 0, search.stderr + best.stderr
    assert missing.returncode == 2
    shown = f"postgresql://{db.user}:***@127.0.0.1:{db.port}/{db.name}"
    assert json.loads(search.stdout)["storage"] == json.loads(best.stdout)["storage"] == shown
    assert f"in {shown};" in search.stderr
    assert f"in {shown};" in missing.stderr
    forms = {password, quote(password, safe=""), quote(password), quote_plus(password)}
    dump = postgres.dump(db.name)
    for text in (search.stdout, search.stderr, best.stdout, best.stderr, missing.stderr, dump):
        assert not any(f in text for f in forms)


def test_the_storage_can_come_from_the_environment(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    """``NASMLCN_STORAGE`` instead of ``--storage``: the URL stays out of the
    command line; the study goes to that database, not to the default SQLite file."""
    db = postgres.create_database()
    env = {"NASMLCN_STORAGE": db.url}
    search = run_cli(*SEARCH, "--trials", "2", "--json", "-q", env=env, cwd=tmp_path)
    assert search.returncode == 0, search.stderr
    data = json.loads(search.stdout)
    assert data["storage"] == f"postgresql://{db.user}:***@127.0.0.1:{db.port}/{db.name}"
    assert not (tmp_path / "studies").exists()  # the default storage was not used
    assert data["study"] in postgres.dump(db.name)
    best = run_cli("best", "--json", env=env, cwd=tmp_path)
    assert best.returncode == 0, best.stderr
    assert json.loads(best.stdout)["study"] == data["study"]
    # --storage still wins over the environment
    other = run_cli("best", "--storage", f"sqlite:///{tmp_path / 'none.db'}", env=env, cwd=tmp_path)
    assert other.returncode == 2
    assert "no such database file" in other.stderr


def test_a_recipes_storage_is_hidden_too_and_the_environment_comes_first(
    postgres: PostgresServer, tmp_path: Path
) -> None:
    """``--config`` recipes may carry ``storage``: shown redacted like ``--storage``.
    ``$NASMLCN_STORAGE`` stands in for ``--storage``, so it wins over the recipe."""
    db = postgres.create_database()
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(
        f'storage = "{db.url}"\nevaluator = "proxy"\ndevices = "2xK80"\nmem = "12GB"\n'
        "epochs = 1\ntrials = 2\n"
    )
    shown = f"postgresql://{db.user}:***@127.0.0.1:{db.port}/{db.name}"
    search = run_cli("search", "--config", str(recipe), "--json", cwd=tmp_path)
    assert search.returncode == 0, search.stderr
    data = json.loads(search.stdout)
    assert data["storage"] == data["config"]["storage"] == shown
    assert f"in {shown};" in search.stderr
    assert db.password not in search.stdout + search.stderr + postgres.dump(db.name)

    other = tmp_path / "env.db"
    env = {"NASMLCN_STORAGE": f"sqlite:///{other}"}
    moved = run_cli("search", "--config", str(recipe), "--json", "-q", env=env, cwd=tmp_path)
    assert moved.returncode == 0, moved.stderr
    assert json.loads(moved.stdout)["storage"] == f"sqlite:///{other}"
    assert other.is_file()
