"""A throwaway PostgreSQL cluster for the tests: `initdb --no-sync` into a temporary directory,
one `postgres` listening on a unix socket there only (no TCP port), stopped by its pid.

PostgreSQL refuses to run as root, and CI runs as root: then the cluster runs as the
`postgres` system user (which Debian's package creates) in a directory it owns. Nothing is
mocked: the tests talk to this server with psycopg like the team server does.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

#: how long the server may take to accept connections, and to stop
START_SECONDS = 60.0
STOP_SECONDS = 30.0


def bindir() -> Path | None:
    """Where `initdb` and `postgres` are: on PATH, else Debian's versioned directory."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    return Path(candidates[0]).parent if candidates else None


class Cluster:
    """One running server; `url(name)` is a conninfo for database `name` on it."""

    def __init__(self, root: Path, process: subprocess.Popen[bytes]) -> None:
        self.root = root
        self.process = process
        self._names = itertools.count(1)

    @property
    def socket_dir(self) -> Path:
        return self.root / "sock"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://huiyi@/{database}?host={self.socket_dir}"

    def new_database(self) -> str:
        """A fresh, empty database; its conninfo."""
        import psycopg

        name = f"t{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def pid(self) -> int | None:
        """The postmaster's pid, from the file it writes (the process started may be `runuser`,
        which waits for it)."""
        try:
            return int((self.root / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> None:
        pid = self.pid()
        if pid is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGINT)  # fast shutdown
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def _as_postgres() -> tuple[list[str], pwd.struct_passwd | None]:
    """The command prefix that runs a server binary as a user allowed to (not root)."""
    if os.geteuid() != 0:
        return [], None
    user = pwd.getpwnam("postgres")
    return ["runuser", "-u", "postgres", "--"], user


#: what makes a test cluster fast and not crash-safe (a benchmark runs without them)
FAST = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")


@contextlib.contextmanager
def cluster(
    *,
    durable: bool = False,
    shared_buffers: str = "64MB",
    root: Path | None = None,
    keep: bool = False,
) -> Iterator[Cluster]:
    """Start a cluster for the length of the block (`durable`: with PostgreSQL's default
    fsync and commit settings, as the load benchmark measures; `root`: where, instead of a
    temporary directory; `keep`: leave it running after the block, for a later run to use)."""
    found = bindir()
    if found is None:
        raise RuntimeError(
            "PostgreSQL is not installed (no initdb); `make test` installs it with apt-get"
        )
    prefix, user = _as_postgres()
    root = Path(tempfile.mkdtemp(prefix="huiyi-pg-", dir=root))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if user is not None:
        for path in (root, sock):
            os.chown(path, user.pw_uid, user.pw_gid)
    subprocess.run(
        [
            *prefix,
            str(found / "initdb"),
            "--no-sync",
            "-A",
            "trust",
            "-U",
            "huiyi",
            "-E",
            "UTF8",
            "--locale=C",
            "-D",
            str(data),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    process = subprocess.Popen(
        [
            *prefix,
            str(found / "postgres"),
            "-D",
            str(data),
            "-k",
            str(sock),
            "-c",
            "listen_addresses=",
            *(arg for setting in (() if durable else FAST) for arg in ("-c", setting)),
            "-c",
            "max_connections=60",
            "-c",
            f"shared_buffers={shared_buffers}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # a child of its own group: an interrupted test run's ^C does not reach it first
        start_new_session=True,
    )
    running = Cluster(root, process)
    try:
        _wait_ready(running)
    except BaseException:
        running.stop()
        raise
    try:
        yield running
    finally:
        if not keep:
            running.stop()


def _wait_ready(running: Cluster) -> None:
    import psycopg

    deadline = time.monotonic() + START_SECONDS
    while True:
        if running.process.poll() is not None:
            raise RuntimeError(f"postgres exited at start ({running.process.returncode})")
        try:
            psycopg.connect(running.url(), connect_timeout=2).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
