"""POST JSON to an OpenAI-compatible endpoint: the one place that speaks HTTP to a model server.

Memory extraction (`/chat/completions`) and the `openai:` embedder (`/embeddings`) both send a
JSON body with an optional bearer key and read a JSON reply. What can go wrong is the same for
both and is turned into one `EndpointError` here: the server answered an HTTP error (with a
short detail from its body), it could not be reached, or it did not answer JSON. Each caller
maps that to its own kind (`EmbeddingError`, `ExtractionError`) and adds its own hint.

The key goes only into the `Authorization` header: it is cut out of any detail the server
echoes back, and redirects are not followed, so it is never sent to a host nobody configured.
Plain `urllib`, so no SDK and no extra dependency.
"""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from email.message import Message
from typing import IO, Literal

__all__ = ["EndpointError", "post_json"]

Problem = Literal["http", "unreachable", "not_json"]

#: how much of an error body is read, and how much of it goes into a message
_DETAIL_BYTES = 2000
_DETAIL_CHARS = 200


class EndpointError(Exception):
    """The endpoint failed: `problem` says how; `str()` is one line that never holds the key."""

    def __init__(self, message: str, *, problem: Problem, status: int | None = None) -> None:
        super().__init__(message)
        self.problem = problem
        self.status = status


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A 3xx is an error: following it would resend the key to wherever it points."""

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: IO[bytes],
        code: int,
        msg: str,
        headers: Message,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None


def post_json(
    url: str,
    body: Mapping[str, object],
    *,
    api_key: str | None = None,
    timeout: float = 30.0,
    what: str = "endpoint",
    user_agent: str = "huiyi",
) -> object:
    """POST `body` as JSON to `url` and return the decoded JSON reply.

    `what` names the endpoint in messages ("embedding endpoint"). Raises `EndpointError`.
    """
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json",
        "User-Agent": user_agent,
    }
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(
        url, data=json.dumps(body).encode("utf-8"), headers=headers, method="POST"
    )
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=timeout) as response:
            raw = response.read()
    except urllib.error.HTTPError as exc:
        try:
            detail = _detail(exc, api_key)
        finally:
            exc.close()  # an HTTPError is also the response: release its socket
        raise EndpointError(
            f"{what} {url} answered HTTP {exc.code}: {detail or exc.reason}",
            problem="http",
            status=exc.code,
        ) from None
    except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets
        reason = getattr(exc, "reason", None) or exc
        raise EndpointError(
            f"cannot reach {what} {url} ({_scrub(str(reason), api_key)})", problem="unreachable"
        ) from None
    try:
        payload: object = json.loads(raw.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError is one too
        raise EndpointError(f"{what} {url} did not answer JSON", problem="not_json") from None
    return payload


def _detail(exc: urllib.error.HTTPError, api_key: str | None) -> str:
    """A one-line reason from an error body: `error.message` or `error` when it is JSON."""
    try:
        text = exc.read(_DETAIL_BYTES).decode("utf-8", "replace")
    except (OSError, http.client.HTTPException):
        return ""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
    text = " ".join(_scrub(text, api_key).split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."


def _scrub(text: str, api_key: str | None) -> str:
    """`text` with the key (if the server echoed it back) masked."""
    return text.replace(api_key, "***") if api_key else text
