"""Run a command with no network but one port: meant to run inside `unshare --net`.

    unshare --net -- python netns.py PORT SOCKET -- COMMAND [ARGS...]

In a fresh network namespace only the loopback device exists, and it is down. This brings it
up, listens on 127.0.0.1:PORT and forwards every connection to the Unix socket SOCKET (Unix
sockets live in the file system, so they cross namespaces: the fake model server listens on
it outside), then runs COMMAND and exits with its status. Whatever else the command tries to
reach (telemetry, update checks, DNS) fails at once inside the namespace: no packet leaves
the machine.

Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import socket
import struct
import subprocess
import sys
import threading

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1
_IFREQ = "16sH14x"


def loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack(_IFREQ, b"lo", 0)
        flags = struct.unpack(_IFREQ, fcntl.ioctl(s, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | IFF_UP))


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)


def _bridge(conn: socket.socket, target: str) -> None:
    with conn, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as upstream:
        try:
            upstream.connect(target)
        except OSError:
            return
        back = threading.Thread(target=_pump, args=(upstream, conn), daemon=True)
        back.start()
        _pump(conn, upstream)
        back.join()


def forward(port: int, target: str) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=_bridge, args=(conn, target), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        print(__doc__, file=sys.stderr)
        return 2
    port, target, command = int(argv[0]), argv[1], argv[3:]
    loopback_up()
    forward(port, target)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
