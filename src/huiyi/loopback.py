"""What counts as this machine: loopback addresses, and the `Host` headers a server bound to
one accepts.

Both local servers, the web page (`huiyi web`) and the MCP server over HTTP (`huiyi mcp
--http`), listen on loopback only unless told otherwise, and both check every request's `Host`
(and `Origin`) against every spelling of the address they are bound to, so a page that a DNS
rebinding points at 127.0.0.1 is refused.
"""

from __future__ import annotations

import ipaddress

__all__ = ["host_checks", "is_loopback"]


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
