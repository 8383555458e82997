"""A real PostgreSQL for the tests of `store.ledger_url`: a throwaway cluster (initdb + pg_ctl)
in a temporary folder, listening on 127.0.0.1 at a free port, one per session, with a fresh
database per test that asks for one. Tests skip, saying why, when the PostgreSQL server binaries
are absent (scripts/install_postgres.sh installs them); under KB_REQUIRE_SYSTEM_DEPS=1 (CI)
they fail.

initdb refuses to run as root: under root the cluster belongs to the `postgres` system user (the
Debian package makes it) or, without one, `nobody`, and its commands run through `runuser`.

    def test_x(postgres): url = postgres.database("test_x")   # postgresql://kb@127.0.0.1:P/test_x
    def test_y(ledger_url): ...   # parametrized: "" (SQLite in the store) and a PostgreSQL URL
"""

from __future__ import annotations

import dataclasses
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.config import Settings
from devtools.ports import free_port
from devtools.system_deps import skip_or_fail

READY_TIMEOUT_S = 30.0
SUPERUSER = "kb"


def server_binaries() -> Path | None:
    """The folder holding initdb, pg_ctl and postgres: the newest /usr/lib/postgresql/N/bin
    (Debian keeps them off PATH), else wherever PATH finds initdb."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                   key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0)
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


@dataclass
class RunningPostgres:
    host: str
    port: int
    run_as: list[str]  # the command prefix that runs as the cluster's owner

    def url(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@{self.host}:{self.port}/{database}"

    def database(self, name: str) -> str:
        """A fresh, empty database `name` (dropped first if a test made it before); its URL."""
        import psycopg

        name = re.sub(r"[^a-z0-9_]", "_", name.lower())[:60]
        with psycopg.connect(self.url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


class Unavailable(Exception):
    """PostgreSQL cannot be started here; the message says why and what to install."""


def _owner() -> tuple[list[str], int, int]:
    """The command prefix to run the server as a user initdb accepts, and that user's ids."""
    if os.geteuid() != 0:
        return [], os.getuid(), os.getgid()
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return ["runuser", "-u", name, "--"], entry.pw_uid, entry.pw_gid
    raise Unavailable("running as root without a `postgres` or `nobody` user: initdb refuses root")


@contextmanager
def throwaway_cluster() -> Iterator[RunningPostgres]:
    """initdb + pg_ctl start in a temporary folder; stopped and removed at the end."""
    binaries = server_binaries()
    if binaries is None:
        raise Unavailable("PostgreSQL server binaries (initdb, pg_ctl) not found: run "
                          "scripts/install_postgres.sh (Debian package postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise Unavailable("psycopg is not installed: pip install 'kb-assistant[postgres]'"
                          ) from exc
    run_as, uid, gid = _owner()
    folder = Path(tempfile.mkdtemp(prefix="kb-postgres-"))
    os.chown(folder, uid, gid)
    data = folder / "data"
    port = free_port()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*run_as, *args], capture_output=True, text=True, timeout=120)

    init = run(str(binaries / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust",
               "--encoding=UTF8", "--locale=C", "--no-sync")
    if init.returncode != 0:
        shutil.rmtree(folder, ignore_errors=True)
        raise RuntimeError(f"initdb failed:\n{init.stdout}\n{init.stderr}")
    # Fast and private: loopback only, no Unix socket, no waiting for the disk.
    options = (f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories='' "
               "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
               "-c max_connections=200")
    start = run(str(binaries / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"),
                "-o", options, "-w", "-t", str(int(READY_TIMEOUT_S)), "start")
    try:
        if start.returncode != 0:
            log = (folder / "server.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"pg_ctl start failed:\n{start.stderr}\n{log}")
        yield RunningPostgres("127.0.0.1", port, run_as)
    finally:
        run(str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        time.sleep(0.1)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres() -> Iterator[RunningPostgres]:
    try:
        with throwaway_cluster() as running:
            yield running
    except Unavailable as exc:
        skip_or_fail(str(exc))
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(params=["sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest) -> str:
    """`store.ledger_url` for a test that runs on both ledgers: "" (SQLite in the store
    folder), then a fresh PostgreSQL database named after the test."""
    if request.param == "sqlite":
        return ""
    running: RunningPostgres = request.getfixturevalue("postgres")
    return running.database(request.node.name)


def with_ledger(settings: Settings, url: str) -> Settings:
    """`settings` whose ledger is at `url` ("" keeps the SQLite file in the store folder)."""
    return dataclasses.replace(settings, store=dataclasses.replace(settings.store, ledger_url=url))
