"""A private PostgreSQL server for tests: one throwaway cluster on 127.0.0.1.

``initdb`` and ``pg_ctl`` come from Debian's ``postgresql`` package
(``scripts/setup.sh --dev`` installs it). PostgreSQL refuses to run as root, so
under root the cluster belongs to the ``postgres`` user and every server binary
runs through ``runuser``. Clients on 127.0.0.1 log in with a password
(scram-sha-256), as a real deployment would; the fixture itself administers the
cluster as the superuser over its private Unix socket (trust).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

if TYPE_CHECKING:
    import psycopg

SERVER_USER = "postgres"


def _bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` with initdb and pg_ctl."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if not found:
        raise RuntimeError(
            "PostgreSQL server binaries (initdb, pg_ctl) not found in /usr/lib/postgresql/*/bin; "
            "the PostgreSQL tests need them: apt-get install postgresql "
            "(bash scripts/setup.sh --dev installs it)"
        )
    return Path(found[-1]).parent


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Database:
    """A role with a password and a database it owns."""

    user: str
    password: str
    name: str
    port: int

    @property
    def url(self) -> str:
        """``postgresql://user:password@127.0.0.1:port/name`` (the password URL-encoded)."""
        return (
            f"postgresql://{quote(self.user, safe='')}:{quote(self.password, safe='')}"
            f"@127.0.0.1:{self.port}/{self.name}"
        )


class PostgresServer:
    """A running private cluster; :meth:`stop` stops it and removes its files."""

    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.as_root = os.geteuid() == 0
        self.root = Path(tempfile.mkdtemp(prefix="nasmlcn-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        if self.as_root:
            entry = pwd.getpwnam(SERVER_USER)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
        try:
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                SERVER_USER,
                "-E",
                "UTF8",
                "--no-sync",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
            )
            self._start()
        except BaseException:
            self.stop()
            raise

    def _command(self, program: str, *args: str) -> list[str]:
        command = [str(self.bin / program), *args]
        return ["runuser", "-u", SERVER_USER, "--", *command] if self.as_root else command

    def _run(self, program: str, *args: str) -> str:
        result = subprocess.run(
            self._command(program, *args), capture_output=True, text=True, timeout=120
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{program} failed ({result.returncode}): {result.stderr.strip() or result.stdout}"
            )
        return result.stdout

    def _start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories={self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        log = self.root / "server.log"
        try:
            self._run("pg_ctl", "-D", str(self.data), "-l", str(log), "-w", "-o", options, "start")
        except RuntimeError as err:
            text = log.read_text(errors="replace") if log.exists() else ""
            raise RuntimeError(f"{err}\n{text[-2000:]}") from None

    def admin(self, dbname: str = "postgres") -> psycopg.Connection[Any]:
        """A superuser connection (autocommit) to ``dbname`` over the cluster's Unix socket."""
        import psycopg

        return psycopg.connect(
            host=str(self.root), port=self.port, user=SERVER_USER, dbname=dbname, autocommit=True
        )

    def create_database(self, password: str | None = None) -> Database:
        """A new role (with ``password``, default a random one) and a database it owns."""
        from psycopg import sql

        suffix = secrets.token_hex(4)
        db = Database(f"u{suffix}", password or secrets.token_urlsafe(18), f"db{suffix}", self.port)
        with self.admin() as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                    sql.Identifier(db.user), sql.Literal(db.password)
                )
            )
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(db.name), sql.Identifier(db.user)
                )
            )
        return db

    def dump(self, name: str) -> str:
        """``pg_dump`` of database ``name``: its schema and every row of every table."""
        return self._run(
            "pg_dump", "-h", str(self.root), "-p", str(self.port), "-U", SERVER_USER, name
        )

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """A private PostgreSQL cluster for the duration of the ``with`` block."""
    server = PostgresServer()
    try:
        yield server
    finally:
        server.stop()
