"""The web page as an ASGI app (Starlette) behind `guard.Guard`, served by uvicorn on loopback.

Why its own process rather than a listener in the warm service (`transports/service.py`):
the service is a detached helper that fronts start and that exits after ten idle minutes, and
its promise is that it is reachable only through an owner-only Unix socket, never a TCP port.
The page is the opposite: a foreground command a person starts and stops, listening on a
port, with a browser as its client. So `huiyi web` is a process of its own that keeps one
`Huiyi` (the same doorway, index and memory rules) warm for as long as it runs.

SQLite connections belong to the thread that opened them, so every call into the index runs on
one worker thread (`Index`), one at a time, while the event loop keeps serving. The worker
reads what is new in the logs at start and then once a minute, as `huiyi index` would.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import os
import socket
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from huiyi.config import Settings
from huiyi.errors import BusyError, HuiyiError, NotFoundError, UsageError
from huiyi.web import history, memory, status
from huiyi.web.guard import KEY_PARAM, Guard
from huiyi.web.markup import Markup, h, join, safe
from huiyi.web.pages import Page, frame, message
from huiyi.web.words import LANGS, pick

if TYPE_CHECKING:
    import uvicorn

    from huiyi.api import Huiyi
    from huiyi.memory import Memory, Outcome

__all__ = ["STATIC", "Index", "WebServer", "make_app"]

T = TypeVar("T")

STATIC = Path(__file__).parent / "static"
#: how often the worker reads what is new in the logs
REFRESH_SECONDS = 60.0
#: the most sessions the Sessions view lists
SESSIONS_SHOWN = 500
#: the largest form a change may send
MAX_FORM_BYTES = 256 * 1024
_LANG_COOKIE = "huiyi-lang"


class Index:
    """The index of this page, on its one worker thread (`Huiyi.in_worker`, which the
    `Huiyi` owns): `run(fn)` calls `fn(huiyi)` there."""

    def __init__(self, settings: Settings, *, refresh: bool = True) -> None:
        self.settings = settings
        self.refresh_logs = refresh
        self._huiyi: Huiyi | None = None

    def _get(self) -> Huiyi:
        if self._huiyi is None:
            from huiyi.api import Huiyi

            self._huiyi = Huiyi(settings=self.settings)
        return self._huiyi

    async def run(self, fn: Callable[[Huiyi], T]) -> T:
        hy = self._get()
        return await asyncio.wrap_future(hy.submit(lambda: fn(hy)))

    def refresh(self, hy: Huiyi) -> None:
        """Read what is new in the logs (the bundled demo into an empty index); another
        indexer holding the lock is left to finish its work."""
        if not self.refresh_logs:
            return
        with contextlib.suppress(BusyError):
            hy.index(lock_timeout=1.0)
            hy.index_demo()

    def close(self) -> None:
        """Close the index on its own thread and end that thread (again: nothing)."""
        if self._huiyi is not None:
            self._huiyi.close()
            self._huiyi = None


@dataclass(slots=True)
class _Views:
    """The route handlers, sharing the index worker, the guard's CSRF token and the start
    workspace (whose memory store the Memory view shows first)."""

    index: Index
    csrf: str
    home_workspace: str
    _refresher: asyncio.Task[None] | None = field(default=None)

    def page(self, request: Request) -> Page:
        words = pick(request.cookies.get(_LANG_COOKIE), request.headers.get("accept-language", ""))
        return Page(words, self.csrf)

    def html(
        self, request: Request, view: str, title: str, body: Markup, code: int = 200
    ) -> Response:
        return HTMLResponse(frame(self.page(request), view, title, body), status_code=code)

    # -- memory --------------------------------------------------------------------------

    def _memory(self, hy: Huiyi, workspace: str) -> Memory:
        """The stores of `workspace`: the start workspace or one the index knows, never a
        directory a request made up (a write would create its store)."""
        chosen = workspace or self.home_workspace
        if chosen != self.home_workspace and chosen not in hy.workspaces():
            raise UsageError("no such workspace in the index")
        return hy.workspace_memory(chosen)

    async def memory_page(self, request: Request) -> Response:
        ws, query = request.query_params.get("ws", ""), request.query_params.get("q", "")
        page = self.page(request)

        def read(hy: Huiyi) -> tuple[memory.Panel, list[str]]:
            return memory.read_panel(self._memory(hy, ws), query), hy.workspaces()

        try:
            data, known = await self.index.run(read)
        except HuiyiError as exc:
            return self.html(request, "memory", page.words("memory.title"), _refusal(exc), 400)
        choices = [self.home_workspace, *(w for w in known if w != self.home_workspace)]
        picker = h(
            '<form class="ws" method="get" action="/memory"><label>{} <select name="ws">{}'
            '</select></label> <button type="submit">{}</button></form>',
            page.words("memory.workspace"),
            join(
                h(
                    '<option value="{}"{}>{}</option>',
                    w,
                    Markup(" selected" if w == data.workspace else ""),
                    safe(w),
                )
                for w in choices
            ),
            page.words("memory.choose"),
        )
        body = h("<h1>{}</h1>{}", page.words("memory.title"), picker) + memory.panel(page, data)
        return self.html(request, "memory", page.words("memory.title"), body)

    async def memory_panel(self, request: Request) -> Response:
        ws, query = request.query_params.get("ws", ""), request.query_params.get("q", "")
        try:
            data = await self.index.run(lambda hy: memory.read_panel(self._memory(hy, ws), query))
        except HuiyiError as exc:
            return HTMLResponse(_refusal(exc), status_code=400)
        return HTMLResponse(memory.panel(self.page(request), data))

    async def memory_version(self, request: Request) -> Response:
        ws = request.query_params.get("ws", "")
        try:
            data = await self.index.run(lambda hy: memory.read_panel(self._memory(hy, ws)))
        except HuiyiError as exc:
            return JSONResponse({"error": safe(str(exc))}, status_code=400)
        return JSONResponse({"version": memory.version(data.snapshots)})

    async def memory_change(self, request: Request) -> Response:
        action = request.path_params["action"]
        form = await _form(request)
        if form is None or action not in memory.ACTIONS:
            return HTMLResponse(_refusal(UsageError("bad request")), status_code=400)
        ws, target = form.get("ws", ""), form.get("target", "")
        page = self.page(request)

        def apply(hy: Huiyi) -> tuple[Outcome, memory.Panel]:
            mem = self._memory(hy, ws)
            if target not in {t.value for t in mem.targets()}:
                raise UsageError(f"no memory store {target!r} here")
            outcome = memory.change(
                mem, action, target, form.get("key", ""), form.get("content", "")
            )
            return outcome, memory.read_panel(mem)

        try:
            outcome, data = await self.index.run(apply)
        except HuiyiError as exc:
            return HTMLResponse(_refusal(exc), status_code=400)
        notice = message(safe(outcome.message), ok=outcome.ok)  # the core's own words
        return HTMLResponse(memory.panel(page, data, notice))

    # -- history -------------------------------------------------------------------------

    async def search_page(self, request: Request) -> Response:
        page = self.page(request)
        title = page.words("search.title")
        params = dict(request.query_params)

        def run(hy: Huiyi) -> Markup:
            known = hy.workspaces()
            try:
                form = history.SearchForm.parse(params, known)
            except UsageError as exc:
                return history.search_view(page, history.SearchForm(), known, None, error=str(exc))
            if not form.query:
                return history.search_view(page, form, known, None)
            try:
                result = hy.search(form.query, limit=20, **form.search_args())  # type: ignore[arg-type]
            except HuiyiError as exc:
                return history.search_view(page, form, known, None, error=str(exc))
            why = result.why_empty()
            notes = [*([why] if why else []), *result.notes]
            return history.search_view(page, form, known, result.hits, result.layers, notes)

        body = await self.index.run(run)
        return self.html(request, "search", title, h("<h1>{}</h1>", title) + body)

    async def sessions_page(self, request: Request) -> Response:
        page = self.page(request)
        title = page.words("sessions.title")
        found = await self.index.run(
            lambda hy: hy.sessions(all_workspaces=True, limit=SESSIONS_SHOWN + 1)
        )
        more = len(found) > SESSIONS_SHOWN
        body = history.sessions_view(page, found[:SESSIONS_SHOWN], more)
        return self.html(request, "sessions", title, h("<h1>{}</h1>", title) + body)

    async def session_page(self, request: Request) -> Response:
        page = self.page(request)
        session_id = request.path_params["session_id"]
        start = _number(request.query_params.get("from")) or 0
        at = _number(request.query_params.get("at"))

        def read(hy: Huiyi) -> Markup:
            session = hy.session(session_id)
            events = hy.read(session_id, from_seq=start, limit=history.PAGE_EVENTS)
            return history.reader(page, session, events, start, at)

        try:
            body = await self.index.run(read)
        except NotFoundError:
            text = page.words("error.notfound")
            return self.html(
                request, "sessions", text, h('<p class="message refused">{}</p>', text), 404
            )
        return self.html(request, "sessions", page.words("sessions.title"), body)

    # -- status --------------------------------------------------------------------------

    async def _status(self, request: Request, *, picture: bool = True) -> Markup:
        """The Status view; without the picture for the script's refresh of the coverage."""
        page = self.page(request)

        asked = request.query_params.get("ws", "")

        def read(hy: Huiyi) -> Markup:
            mem = hy.workspace_memory(self.home_workspace)
            files = [mem.store(t).paths.main for t in mem.targets()]
            if not picture:
                return status.status_view(page, hy.status(), files)
            known = hy.workspaces()
            chosen = asked if asked in known else None
            drawn = status.activity_section(
                page,
                known,
                chosen,
                hy.activity(chosen),
                hy.coverage(chosen, all_workspaces=chosen is None),
            )
            return status.status_view(page, hy.status(), files, drawn)

        return await self.index.run(read)

    async def status_page(self, request: Request) -> Response:
        title = self.page(request).words("status.title")
        body = await self._status(request)
        return self.html(request, "status", title, h("<h1>{}</h1>", title) + body)

    async def status_part(self, request: Request) -> Response:
        return HTMLResponse(await self._status(request, picture=False))

    # -- the rest ------------------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        """The view with something to see: Memory when this workspace has history or
        memory entries, else Sessions when any workspace has history, else Status (where
        the logs were looked for)."""

        def first(hy: Huiyi) -> str:
            known = hy.workspaces()
            mem = hy.workspace_memory(self.home_workspace)
            if self.home_workspace in known or any(mem.entries(t) for t in mem.targets()):
                return "/memory"
            return "/sessions" if known else "/status"

        return RedirectResponse(await self.index.run(first), status_code=303)

    async def language(self, request: Request) -> Response:
        form = await _form(request)
        lang = (form or {}).get("lang", "")
        if lang not in LANGS:
            return Response(status_code=400)
        response = Response(status_code=204)
        response.set_cookie(
            _LANG_COOKIE, lang, max_age=365 * 86400, samesite="strict", httponly=True
        )
        return response

    @contextlib.asynccontextmanager
    async def lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        self._refresher = asyncio.create_task(self._refresh_forever())
        try:
            yield
        finally:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher

    async def _refresh_forever(self) -> None:
        while True:
            await self.index.run(self.index.refresh)
            await asyncio.sleep(REFRESH_SECONDS)


def _refusal(exc: HuiyiError) -> Markup:
    return message(safe(str(exc)), ok=False)


def _number(text: str | None) -> int | None:
    return int(text) if text is not None and text.isdigit() and len(text) < 19 else None


async def _form(request: Request) -> dict[str, str] | None:
    """An urlencoded form body (what the page's script sends), None when it is too large."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


def make_app(index: Index, *, host: str, port: int, workspace: str) -> Guard:
    """The whole app for one start: the guard (with this start's key) around the routes."""
    views = _Views(index, "", workspace)
    routes = [
        Route("/", views.home),
        Route("/memory", views.memory_page),
        Route("/memory/panel", views.memory_panel),
        Route("/memory/version", views.memory_version),
        Route("/memory/{action}", views.memory_change, methods=["POST"]),
        Route("/search", views.search_page),
        Route("/sessions", views.sessions_page),
        Route("/session/{session_id}", views.session_page),
        Route("/status", views.status_page),
        Route("/status/part", views.status_part),
        Route("/lang", views.language, methods=["POST"]),
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    guard = Guard(Starlette(routes=routes, lifespan=views.lifespan), host=host, port=port)
    views.csrf = guard.csrf
    return guard


class WebServer:
    """`huiyi web` for one start: a bound loopback socket, the app, uvicorn."""

    def __init__(
        self, settings: Settings, *, host: str = "127.0.0.1", port: int = 0, refresh: bool = True
    ) -> None:
        from huiyi.workspace import resolve

        self.index = Index(settings, refresh=refresh)
        self.socket = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind((host, port))
        self.socket.listen(128)  # connections wait in the queue until uvicorn accepts them
        self.host = host
        self.port = int(self.socket.getsockname()[1])
        workspace = resolve(settings.workspace or os.getcwd())
        self.app = make_app(self.index, host=host, port=self.port, workspace=workspace)
        self.home = settings.home
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._launcher: Path | None = None

    @property
    def url(self) -> str:
        """The address to open: it carries this start's key."""
        shown = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{shown}:{self.port}/?{KEY_PARAM}={self.app.key}"

    def launcher(self) -> Path:
        """An owner-only file (0600, in the 0700 `HUIYI_HOME`) that sends a browser on to
        `url`, for `huiyi web --open`: the browser's command line, which every user of the
        machine can read, then holds this file's name and not the key (what Jupyter does).
        `close` removes it."""
        from huiyi.files import atomic_write

        if self._launcher is None:
            target = html.escape(self.url, quote=True)
            page = (
                '<!doctype html><meta charset="utf-8">'
                f'<meta http-equiv="refresh" content="0;url={target}">'
                f'<title>huiyi web</title><p><a href="{target}">Open huiyi web</a></p>\n'
            )
            self._launcher = self.home / "web" / f"open-{self.port}.html"
            atomic_write(self._launcher, page.encode("utf-8"))
        return self._launcher

    def _make(self) -> uvicorn.Server:
        import uvicorn

        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="on")
        self._server = uvicorn.Server(config)
        return self._server

    def run(self) -> None:
        """Serve until interrupted (Ctrl-C)."""
        try:
            self._make().run(sockets=[self.socket])
        finally:
            self.close()

    def start(self) -> None:
        """Serve on a thread of its own (tests, benchmarks); `stop` ends it."""
        server = self._make()
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self.socket]}, daemon=True
        )
        self._thread.start()
        while not server.started and self._thread.is_alive():
            threading.Event().wait(0.01)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(10)
        self.close()

    def close(self) -> None:
        self.socket.close()
        self.index.close()
        if self._launcher is not None:
            self._launcher.unlink(missing_ok=True)
            self._launcher = None
