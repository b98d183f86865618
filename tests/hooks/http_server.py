"""A real HTTP server on a loopback port for http hooks to POST to (the ``server`` fixture of
``tests/hooks/conftest.py``): answers each path with its :class:`Reply`, records each request."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: str = ""
    delay: float = 0.0


@dataclass
class Server:
    """Answers each path with its :class:`Reply`; records what each request sent."""

    port: int
    replies: dict[str, Reply] = field(default_factory=dict)
    seen: list[dict[str, Any]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"


@contextmanager
def serving() -> Iterator[Server]:
    state = Server(0)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"null")
            state.seen.append({"path": self.path, "headers": dict(self.headers), "body": body})
            reply = state.replies.get(self.path, Reply())
            if reply.delay:
                state.release.wait(reply.delay)
            data = reply.body.encode()
            self.send_response(reply.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
