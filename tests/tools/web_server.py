"""A real HTTP(S) server on a free loopback port for the web tool tests, and a recording transport.

``LoopbackSite`` serves fixed routes (HTML, JSON, a PDF, a 20 MB body, a redirect loop, a slow
body, a fake Brave Search API) from a thread and counts what it served, so tests assert counts,
never durations.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

PAGE = b"""<!doctype html><html><head><title>Release notes</title>
<style>body { color: red }</style><script>var leaked = "SCRIPT_TEXT";</script></head>
<body><h2>Version 2.0</h2><p>The <strong>widget</strong> now spins twice as fast.</p>
<ul><li>faster</li><li>quieter</li></ul><a href="/next">Next page</a></body></html>"""

BIG = 20_000_000
CHUNK = b"x" * 65536


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        site = self.server.site
        site.hits[parts.path] += 1
        site.hosts.append(self.headers.get("Host", ""))
        route = site.routes.get(parts.path)
        if route is not None:
            route(self, parse_qs(parts.query))
        else:
            self._send(404, b"not found", "text/plain")

    def big(self, query: dict[str, list[str]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(BIG))
        self.end_headers()
        try:
            for _ in range(BIG // len(CHUNK) + 1):
                self.wfile.write(CHUNK)
                self.server.site.big_written += len(CHUNK)
        except OSError:
            return

    def slow(self, query: dict[str, list[str]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", "1000")
        self.end_headers()
        try:
            for _ in range(1000):
                self.wfile.write(b".")
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            return


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    site: LoopbackSite


class LoopbackSite:
    """The test site; ``url(path)`` is its address, ``hits`` counts requests per path."""

    def __init__(self, tls: ssl.SSLContext | None = None, host_name: str = "127.0.0.1") -> None:
        self.hits: Counter[str] = Counter()
        self.hosts: list[str] = []
        self.big_written = 0
        self.search_requests: list[tuple[dict[str, list[str]], str | None]] = []
        self.search_status = 200
        self.search_results: list[dict[str, Any]] = []
        self.routes: dict[str, Callable[[_Handler, dict[str, list[str]]], None]] = {
            "/page.html": lambda h, q: h._send(200, PAGE, "text/html; charset=utf-8"),
            "/data.json": lambda h, q: h._send(200, b'{"answer": 42}', "application/json"),
            "/notes.md": lambda h, q: h._send(200, b"# Notes\n\n- one", "text/markdown"),
            "/doc.pdf": lambda h, q: h._send(200, b"%PDF-1.7\n%\xe2\xe3", "application/pdf"),
            "/logo.png": lambda h, q: h._send(200, b"\x89PNG\r\n", "image/png"),
            "/blob": lambda h, q: h._send(200, b"\x00\x01", "application/octet-stream"),
            "/big": _Handler.big,
            "/slow": _Handler.slow,
            "/loop": lambda h, q: h._send(302, b"", "text/plain", Location="/loop"),
            "/moved": lambda h, q: h._send(301, b"", "text/plain", Location="/page.html"),
            "/away": lambda h, q: h._send(
                302, b"", "text/plain", Location="http://169.254.169.254/latest/meta-data/"
            ),
            "/res/v1/web/search": self._search,
        }
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.site = self
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.scheme = "https" if tls is not None else "http"
        self.host_name = host_name
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    def url(self, path: str = "/") -> str:
        return f"{self.scheme}://{self.host_name}:{self.port}{path}"

    def _search(self, handler: _Handler, query: dict[str, list[str]]) -> None:
        self.search_requests.append((query, handler.headers.get("X-Subscription-Token")))
        if self.search_status != 200:
            body = {
                "type": "ErrorResponse",
                "error": {
                    "code": "SUBSCRIPTION_TOKEN_INVALID",
                    "detail": "The provided token is invalid.",
                    "status": self.search_status,
                },
            }
        else:
            body = {
                "type": "search",
                "query": {"original": query["q"][0]},
                "web": {"type": "search", "results": self.search_results},
            }
        handler._send(self.search_status, json.dumps(body).encode(), "application/json")

    def start(self) -> LoopbackSite:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@contextmanager
def running(
    tls: ssl.SSLContext | None = None, host_name: str = "127.0.0.1"
) -> Iterator[LoopbackSite]:
    site = LoopbackSite(tls, host_name).start()
    try:
        yield site
    finally:
        site.stop()


class Recorder:
    """A transport factory for ``WebConfig(transport=...)`` that records every request it is
    asked to send (a connect attempt) and answers with ``respond`` without touching the network."""

    def __init__(self, respond: Callable[[httpx.Request], httpx.Response] | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self._respond = respond or (
            lambda r: httpx.Response(
                200, text="<p>hello</p>", headers={"Content-Type": "text/html"}
            )
        )

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._respond(request)

    def __call__(self) -> httpx.AsyncBaseTransport:
        return httpx.MockTransport(self._handle)
