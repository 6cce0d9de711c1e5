"""The one route from every front to the core: the warm service if it runs, else here.

    reply = route(request, service=ServiceClient(settings), local=handler, peer=peer)

Every front calls this and nothing else to have a request served: the stdio MCP server for a
tool call, the hook command for a hook, the CLI for a person's search or recall. The request
says how it may travel (`protocol`): a tool call or a hook may start the service (its first
use pays for loading the core once, every later one finds it warm); a person's search only asks
a service that already runs. When no service answers (`HUIYI_SERVICE=off`, none running, none
could start, or it cannot serve), `local()` builds this process's own `RequestHandler`, the
same code the service runs, and serves the request here.

A service that accepted a request and died before replying may have done its work (a memory
write, a hook's indexing): such a request fails with its `stopped` message rather than running
twice; an idempotent one (a search) is served here instead.

One thing only a process serving here can tell: that serving would load the embedding model
into it (a hybrid search over an embedded history). Then the service, when one may run, is
started in the background meanwhile, so that the next request skips the load.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from huiyi.config import Settings
from huiyi.policy.protocol import NO_PEER, Failure, Reply, Request, stopped, travel

if TYPE_CHECKING:
    from typing import Protocol

    from huiyi.policy.protocol import Peer
    from huiyi.transports.service_client import ServiceClient

    class Local(Protocol):
        """What serves a request in this process (`policy.handler.RequestHandler`)."""

        def handle(self, request: Request, peer: Peer) -> Reply: ...

        def loads_model(self, request: Request) -> bool: ...


__all__ = ["Local", "any_running", "route"]


def route(
    request: Request,
    settings: Settings,
    local: Callable[[], Local],
    *,
    peer: Peer = NO_PEER,
    service: ServiceClient | None = None,
) -> Reply:
    """`request` served by the warm service for `settings`, else by `local()` in this process;
    `peer` answers what serving it asks back. `service`: the client a front keeps across its
    requests (one is made for this request otherwise)."""
    how = travel(request)
    if settings.service and service is None and (how.starts_service or any_running(settings)):
        from huiyi.transports.service_client import ServiceClient

        service = ServiceClient(settings, start=how.starts_service)
    if settings.service and service is not None:
        from huiyi.transports.service_client import ServiceStopped

        try:
            reply = service.call(request, peer)
        except ServiceStopped as exc:
            if not how.idempotent:
                message = stopped(request, str(service.log_path), str(exc))
                return Reply(failure=Failure("HuiyiError", message))
            reply = None
        if reply is not None:
            return reply
    handler = local()
    if not settings.service or not handler.loads_model(request):
        return handler.handle(request, peer)
    from huiyi.transports.service_client import ServiceClient

    # the spawn and its wait for the socket overlap with the search
    warming = threading.Thread(target=ServiceClient(settings).ensure, name="huiyi-start-service")
    warming.start()
    try:
        return handler.handle(request, peer)
    finally:
        warming.join()


def any_running(settings: Settings) -> bool:
    """Whether any service socket (`service-<key>.sock`) is in the home. Without one no
    service can answer, and a request that starts none skips the client's imports (socket,
    hashlib) and its key; a socket left by a killed service is found stale by the client."""
    try:
        with os.scandir(settings.home) as entries:
            return any(e.name.startswith("service-") and e.name.endswith(".sock") for e in entries)
    except OSError:
        return False
