"""Finding and stopping the warm huiyi services a test started (`huiyi.transports.service`).

A front starts its home's service detached, so it outlives the front and the test; tests that
start fronts stop the services of their home afterwards (`stop_services`), waiting on the
process itself (a pidfd), never on the clock.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import struct
from pathlib import Path

from huiyi.transports.wire import address


def service_sockets(huiyi_home: Path) -> list[Path]:
    return sorted(huiyi_home.glob("service-*.sock"))


def service_pid(path: Path) -> int | None:
    """The pid of the process listening on `path` (SO_PEERCRED), None if nobody is."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        try:
            with address(path) as where:  # a pytest path may be too long for AF_UNIX
                conn.connect(where)
        except OSError:
            return None
        pid, _uid, _gid = struct.unpack(
            "3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12)
        )
    return int(pid)


def wait_gone(pid: int, timeout: float = 60.0) -> bool:
    """Wait until process `pid` (not necessarily our child) has exited."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


def kill_service(path: Path, sig: int = signal.SIGKILL) -> int:
    """Signal the service on `path` and wait until it is gone; returns its pid."""
    pid = service_pid(path)
    assert pid is not None, f"no service listens on {path}"
    os.kill(pid, sig)
    assert wait_gone(pid), f"service {pid} did not exit"
    return pid


def stop_services(huiyi_home: Path) -> None:
    """Stop every service listening in `huiyi_home` (SIGTERM: it removes its socket)."""
    for path in service_sockets(huiyi_home):
        pid = service_pid(path)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
            wait_gone(pid)
