"""What counts as this machine: loopback addresses, and the `Host` headers a server bound to
one accepts.

Both local servers, the web page (`huiyi web`) and the MCP server over HTTP (`huiyi mcp
--http`), listen on loopback only unless told otherwise, and both check every request's `Host`
(and `Origin`) against every spelling of the address they are bound to, so a page that a DNS
rebinding points at 127.0.0.1 is refused.

A loopback port is open to every user of the machine, so the web page also asks who is on the
other end (`peer_uid`): Linux lists every TCP socket of the network namespace with its owner in
`/proc/net/tcp` and `/proc/net/tcp6`, and the client's end of a loopback connection is there.
"""

from __future__ import annotations

import ipaddress
import socket
import struct
from pathlib import Path

__all__ = ["host_checks", "is_loopback", "peer_uid"]

#: where Linux lists the TCP sockets of this network namespace, with their owners
_TCP_TABLES = {socket.AF_INET: Path("/proc/net/tcp"), socket.AF_INET6: Path("/proc/net/tcp6")}
#: the states a client's socket has while it waits for an answer (ESTABLISHED, CLOSE_WAIT)
_OPEN_STATES = frozenset({"01", "08"})


def is_loopback(host: str) -> bool:
    """`localhost`, or an IP address of this machine's loopback (127.0.0.0/8, ::1 however
    spelled). Other names (`localhost.`, `ip6-localhost`) depend on the resolver: not loopback."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_checks(host: str, port: int) -> list[str] | None:
    """The `Host` header values a server bound to `host:port` accepts (its `Origin` values
    are these behind `http://`); None when no check is possible (0.0.0.0 or ::, any address).

    Every spelling of the bound address counts: as given, in canonical form, and `localhost`
    for a loopback address (a browser sends `Host: localhost` only when it visits localhost)."""
    names = {host.lower()}
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is not None:
        if address.is_unspecified:
            return None
        names.add(str(address))
    if is_loopback(host):
        names.add("localhost")
        if host.lower() == "localhost":
            names |= {"127.0.0.1", "::1"}
    shown = sorted(f"[{name}]" if ":" in name else name for name in names)
    return [f"{name}:{port}" for name in shown] + (shown if port == 80 else [])


def peer_uid(client: tuple[str, int], server: tuple[str, int]) -> int | None:
    """The user id owning the client's end of the loopback TCP connection `client` ->
    `server` (each an (address, port) as the server sees them); None when the table cannot be
    read (not Linux) and -1 when the connection is not in it (the client has gone)."""
    family = socket.AF_INET6 if ":" in client[0] else socket.AF_INET
    try:
        local, remote = _proc_address(family, *client), _proc_address(family, *server)
    except OSError:  # not an address: nobody's
        return -1
    try:
        with _TCP_TABLES[family].open(encoding="ascii", errors="replace") as table:
            next(table, None)  # the header
            for line in table:
                fields = line.split()
                if len(fields) > 7 and fields[1] == local and fields[2] == remote:
                    return int(fields[7]) if fields[3] in _OPEN_STATES else -1
    except OSError:
        return None
    return -1


def _proc_address(family: int, host: str, port: int) -> str:
    """`host:port` as `/proc/net/tcp*` spells it: the address's 32-bit words in this
    machine's byte order, in hex, and the port in hex."""
    packed = socket.inet_pton(family, host)
    words = struct.unpack(f"={len(packed) // 4}I", packed)
    return "".join(f"{word:08X}" for word in words) + f":{port:04X}"
