"""A private PostgreSQL cluster (initdb + pg_ctl on a free port) that a test may stop, start and restart.

The machine's shared server on 5432 serves every other test run, so a test that restarts PostgreSQL does it
to a cluster of its own. The cluster uses the same PostgreSQL 15 binaries, so pgvector and pg_trgm (whose
extension files are shared) are available. Run as root, the cluster runs as the `postgres` user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support.processes import free_port, wait_for

PG_BIN = Path(os.environ.get("MEMORYHUB_PG_BIN", "/usr/lib/postgresql/15/bin"))


def available() -> bool:
    return (PG_BIN / "initdb").exists() and (PG_BIN / "pg_ctl").exists()


class PrivateCluster:
    def __init__(self) -> None:
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="memoryhub-pg-"))
        self.data = self.dir / "data"
        self.log = self.dir / "server.log"

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(a) for a in args]
        if os.geteuid() == 0:  # initdb and postgres refuse to run as root
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, check=check, capture_output=True, text=True, timeout=120)

    def create(self) -> PrivateCluster:
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run(PG_BIN / "initdb", "-D", self.data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
        return self.start()

    def start(self) -> PrivateCluster:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} -c fsync=off -c max_connections=200"
        self._run(PG_BIN / "pg_ctl", "-D", self.data, "-l", self.log, "-o", options, "-w", "-t", "60", "start")
        wait_for(self.ready, timeout=60, message=f"PostgreSQL on port {self.port}")
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run(PG_BIN / "pg_ctl", "-D", self.data, "-m", mode, "-w", "-t", "60", "stop", check=False)

    def restart(self) -> None:
        self.stop()
        self.start()

    def ready(self) -> bool:
        result = subprocess.run(
            [str(PG_BIN / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-q"], check=False, timeout=10
        )
        return result.returncode == 0

    def psql(self, sql: str, database: str = "postgres") -> str:
        result = subprocess.run(
            ["psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d", database, "-XAtc", sql],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return result.stdout

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.dir, ignore_errors=True)
