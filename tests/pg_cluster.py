"""A throwaway PostgreSQL cluster for tests and benchmarks.

``initdb`` in a temporary folder, ``pg_ctl start`` on a free port of 127.0.0.1 with the
socket in that folder, one database, torn down (``pg_ctl stop -m immediate`` and the folder
removed) at the end. ``initdb`` refuses to run as root, so when the caller is root (as CI
is) every server command runs as an unprivileged user through ``runuser`` (the Debian
``postgres`` user, or ``nobody``), and the folder is handed to that user first.

Nothing here touches a system cluster: no ``pg_ctlcluster``, no service, no file outside
the temporary folder.

Usage::

    with PostgresCluster() as cluster:
        url = cluster.url          # postgresql://peerboard@127.0.0.1:PORT/peerboard

or ``python tests/pg_cluster.py`` to start one, print its URL and wait for Ctrl-C.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

DATABASE = "peerboard"
USER = "peerboard"


class ClusterUnavailable(RuntimeError):
    """PostgreSQL's server programs are not installed (``apt install postgresql``)."""


def find_bin_dir() -> Path:
    """The folder holding ``initdb`` and ``pg_ctl`` (Debian keeps them out of PATH)."""
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    found = shutil.which("pg_ctl")
    if found:
        candidates.insert(0, Path(found).resolve().parent)
    for folder in candidates:
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    raise ClusterUnavailable("PostgreSQL's initdb and pg_ctl were not found; install Debian's postgresql package")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_user() -> str | None:
    """The user to run the server as: None for the caller itself, unless it is root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise ClusterUnavailable("running as root and no unprivileged user (postgres, nobody) to run the server as")


class PostgresCluster:
    """Start a private PostgreSQL server; ``url`` connects to its one database."""

    def __init__(self, *, port: int | None = None, fsync: bool = False) -> None:
        self.bin_dir = find_bin_dir()
        self.port = port or free_port()
        self.fsync = fsync
        self.user = _server_user()
        self.folder: Path | None = None

    @property
    def data_dir(self) -> Path:
        assert self.folder is not None
        return self.folder / "data"

    @property
    def url(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *argv: str) -> subprocess.CompletedProcess:
        command = [str(argv[0]), *argv[1:]]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        result = subprocess.run(command, capture_output=True, text=True, cwd=self.folder)
        if result.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[:2])} failed ({result.returncode}): {result.stderr.strip()[-800:]}")
        return result

    def start(self) -> "PostgresCluster":
        self.folder = Path(tempfile.mkdtemp(prefix="peerboard-pg-"))
        if self.user is not None:
            record = pwd.getpwnam(self.user)
            os.chown(self.folder, record.pw_uid, record.pw_gid)
        os.chmod(self.folder, 0o700)
        self._run(self.bin_dir / "initdb", "-D", str(self.data_dir), "-U", USER, "--auth=trust",
                  "--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions")
        options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
                   f"-c fsync={'on' if self.fsync else 'off'} -c synchronous_commit={'on' if self.fsync else 'off'} "
                   "-c full_page_writes=off -c max_connections=50")
        self._run(self.bin_dir / "pg_ctl", "-D", str(self.data_dir), "-o", options, "-l",
                  str(self.folder / "server.log"), "-w", "-t", "60", "start")
        self._run(self.bin_dir / "createdb", "-h", str(self.folder), "-p", str(self.port), "-U", USER, DATABASE)
        return self

    def stop(self) -> None:
        if self.folder is None:
            return
        try:
            if (self.data_dir / "postmaster.pid").exists():
                self._run(self.bin_dir / "pg_ctl", "-D", str(self.data_dir), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None

    def __enter__(self) -> "PostgresCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def closing_pg_connections():
    """Close, when the block ends, every PostgreSQL connection the stores opened in it
    (tests open stores, and the CLI run in-process leaves its own open).

    Yields the list of those connections (:class:`peercore.db.PgConnection`), in the order opened.
    """
    from peercore import db

    opened = []
    connect = db.connect_postgres

    def tracked(url):
        connection = connect(url)
        opened.append(connection)
        return connection

    db.connect_postgres = tracked
    try:
        yield opened
    finally:
        db.connect_postgres = connect
        for connection in opened:
            with contextlib.suppress(Exception):
                connection.close()


if __name__ == "__main__":
    with PostgresCluster() as cluster:
        print(cluster.url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
