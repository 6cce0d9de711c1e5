"""The one HTTP client for OpenAI-compatible endpoints, against real local servers: what each
failure looks like to the embedder and to memory extraction, and that the key never leaks."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from huiyi.errors import EmbeddingError, ExtractionError
from huiyi.memory.extract import ExtractConfig, call_chat
from huiyi.openai_http import EndpointError, post_json
from huiyi.search.embedding.endpoint import OpenAIEmbedder

KEY = "sk-live-secret-key-4242"


@dataclass
class Reply:
    status: int = 200
    body: bytes = b"{}"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Endpoint:
    url: str
    seen: list[dict[str, Any]]
    reply: Reply


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ALL_PROXY", raising=False)


@pytest.fixture
def serve() -> Iterator[Callable[[], Endpoint]]:
    servers: list[tuple[ThreadingHTTPServer, threading.Thread]] = []

    def start() -> Endpoint:
        seen: list[dict[str, Any]] = []
        reply = Reply()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                seen.append(
                    {
                        "path": self.path,
                        "auth": self.headers.get("Authorization"),
                        "body": json.loads(self.rfile.read(length) or b"null"),
                    }
                )
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            do_GET = do_POST

            def log_message(self, format: str, *args: object) -> None:
                pass

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        servers.append((httpd, thread))
        return Endpoint(f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen, reply)

    yield start
    for httpd, thread in servers:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_posts_json_with_the_bearer_key_and_returns_the_reply(
    serve: Callable[[], Endpoint],
) -> None:
    ep = serve()
    ep.reply.body = b'{"ok": [1, 2]}'
    assert post_json(ep.url + "/x", {"a": "回忆"}, api_key=KEY) == {"ok": [1, 2]}
    assert ep.seen == [{"path": "/v1/x", "auth": f"Bearer {KEY}", "body": {"a": "回忆"}}]


def test_an_error_body_that_echoes_the_key_is_masked(serve: Callable[[], Endpoint]) -> None:
    ep = serve()
    ep.reply.status = 401
    ep.reply.body = json.dumps({"error": {"message": f"Incorrect API key: {KEY}"}}).encode()
    with pytest.raises(EndpointError) as info:
        post_json(ep.url + "/x", {}, api_key=KEY, what="test endpoint")
    assert str(info.value) == f"test endpoint {ep.url}/x answered HTTP 401: Incorrect API key: ***"
    assert info.value.problem == "http" and info.value.status == 401


def test_a_long_html_error_page_becomes_one_short_line(serve: Callable[[], Endpoint]) -> None:
    ep = serve()
    ep.reply.status = 502
    ep.reply.body = ("<html>\n<body>\nBad gateway\n" + "x" * 5000 + "</body></html>").encode()
    with pytest.raises(EndpointError) as info:
        post_json(ep.url, {})
    message = str(info.value)
    assert "\n" not in message and "HTTP 502: <html> <body> Bad gateway" in message
    assert len(message) < 300


def test_a_redirect_is_not_followed_so_the_key_stays_home(serve: Callable[[], Endpoint]) -> None:
    elsewhere = serve()
    ep = serve()
    ep.reply.status = 307
    ep.reply.headers = {"Location": elsewhere.url + "/steal"}
    with pytest.raises(EndpointError, match="answered HTTP 307"):
        post_json(ep.url, {}, api_key=KEY)
    assert elsewhere.seen == []


def test_embedder_and_extraction_name_their_endpoint_and_never_the_key(
    serve: Callable[[], Endpoint],
) -> None:
    ep = serve()
    ep.reply.status = 403
    ep.reply.body = f"forbidden for {KEY}".encode()
    embedder = OpenAIEmbedder(ep.url, "m", KEY)
    with pytest.raises(EmbeddingError) as embed_info:
        embedder.embed_query("hello")
    assert str(embed_info.value) == (
        f"embedding endpoint {ep.url}/embeddings answered HTTP 403: forbidden for ***"
    )
    config = ExtractConfig(api_key=KEY, base_url=ep.url, model="m")
    with pytest.raises(ExtractionError) as extract_info:
        call_chat(config, [{"role": "user", "content": "hi"}])
    assert str(extract_info.value) == (
        f"the extraction endpoint {ep.url}/chat/completions answered HTTP 403: forbidden for "
        "***; check HUIYI_EXTRACT_BASE_URL, the model name and the API key"
    )


def test_a_reply_that_is_not_json_is_reported_by_both_callers(
    serve: Callable[[], Endpoint],
) -> None:
    ep = serve()
    ep.reply.body = b"<html>hello</html>"
    with pytest.raises(EmbeddingError, match="did not answer JSON"):
        OpenAIEmbedder(ep.url, "m").embed_query("hello")
    config = ExtractConfig(api_key=KEY, base_url=ep.url, model="m")
    with pytest.raises(ExtractionError, match="did not answer JSON"):
        call_chat(config, [{"role": "user", "content": "hi"}])


def test_an_unreachable_endpoint_is_reported_by_both_callers() -> None:
    probe = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    url = f"http://127.0.0.1:{probe.server_address[1]}/v1"
    probe.server_close()  # nothing listens on this port any more
    with pytest.raises(EmbeddingError, match=r"^cannot reach embedding endpoint .*server running"):
        OpenAIEmbedder(url, "m", KEY, timeout=5).embed_query("hello")
    config = ExtractConfig(api_key=KEY, base_url=url, model="m", timeout_s=5)
    with pytest.raises(ExtractionError, match=r"^cannot reach the extraction endpoint") as info:
        call_chat(config, [{"role": "user", "content": "hi"}])
    assert KEY not in str(info.value)
