"""A real local HTTP server speaking the chat-completions protocol, scripted per test.

Queue replies with :meth:`FakeOpenAI.add`; every request received is kept in ``requests`` (path,
headers, decoded JSON body). When the queue is empty the server answers 500 "no scripted reply".
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted HTTP answer: a JSON/raw ``body``, or ``sse`` events (dicts become JSON; an
    ``(event, data)`` pair is sent with an ``event:`` line, as the Anthropic protocol does)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    sse: list[Any] | None = None
    delay: float = 0.0
    content_type: str | None = None
    cut_short: bool = False  # announce more bytes than sent, then close: a dropped connection


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any
    #: When it arrived (``time.time()``: comparable with the usage store's clock).
    at: float = field(default_factory=time.time)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, fake: FakeOpenAI) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw)
        except ValueError:
            body = raw.decode(errors="replace")
        fake = self.server.fake
        headers = {k.lower(): v for k, v in self.headers.items()}
        reply = fake.record(Received(self.path, headers, body))
        if reply.delay and fake.stopping.wait(reply.delay):
            return
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # the client gave up
            self._send(reply)

    def _send(self, reply: Reply) -> None:
        if reply.sse is not None:
            payload = b"".join(_sse_event(e) for e in reply.sse)
            ctype = reply.content_type or "text/event-stream"
        elif isinstance(reply.body, str | bytes):
            payload = reply.body.encode() if isinstance(reply.body, str) else reply.body
            ctype = reply.content_type or "application/json"
        else:
            payload = json.dumps(reply.body).encode()
            ctype = reply.content_type or "application/json"
        self.send_response(reply.status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(payload) + (100 if reply.cut_short else 0)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)
        self.wfile.flush()


def _sse_event(event: Any) -> bytes:
    name, data = event if isinstance(event, tuple) else (None, event)
    line = b"data: " + (data if isinstance(data, str) else json.dumps(data)).encode() + b"\n\n"
    return (b"event: " + name.encode() + b"\n" + line) if name else line


class FakeOpenAI:
    """The server; use as a context manager (the ``fake_openai`` fixture does)."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.stopping = threading.Event()
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def add(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def record(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            if self._replies:
                return self._replies.popleft()
        return Reply(500, {"error": {"message": "no scripted reply left"}})

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def completion(
    text: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    *,
    finish_reason: str | None = "stop",
    model: str = "fake-model",
) -> dict[str, Any]:
    """A non-streamed chat.completion body."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def function_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chunk(delta: dict[str, Any] | None, finish_reason: str | None = None) -> dict[str, Any]:
    """One chat.completion.chunk; ``delta=None`` makes the final usage-only chunk."""
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake-model",
        "choices": [],
    }
    if delta is None:
        body["usage"] = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    else:
        body["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    return body


def free_port() -> int:
    """A loopback port nothing listens on (for connection-refused tests)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port
