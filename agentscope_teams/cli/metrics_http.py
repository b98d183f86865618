"""A small HTTP/1.0 responder for ``worker --metrics-port``: ``/metrics``, ``/healthz``, ``/readyz``.

No web framework (the worker does not need the server extra): it reads one request head (at most
8 KiB, within :data:`READ_TIMEOUT` seconds), answers ``GET`` of the three paths and closes the
connection. It runs in the worker's task group, so it stops when the worker stops.
"""

from __future__ import annotations

import json

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskStatus

from ..store.base import BaseStore
from ..store.health import store_unready
from ..tracing import metrics
from .common import CommandError

MAX_HEAD = 8192
READ_TIMEOUT = 5.0
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    503: "Service Unavailable",
}


async def serve_metrics(
    store: BaseStore,
    host: str,
    port: int,
    *,
    task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Listen on ``host:port`` until cancelled (turns this process's metrics on); reports the
    bound port through ``task_status`` (``port`` 0 picks a free one)."""
    metrics.enable()
    try:
        listener = await anyio.create_tcp_listener(local_host=host, local_port=port)
    except OSError as exc:
        raise CommandError(
            f"--metrics-port: cannot listen on {host}:{port} ({exc.strerror or exc}); "
            "choose a free port or another --metrics-host"
        ) from exc
    bound = listener.extra(SocketAttribute.local_port)
    task_status.started(bound)
    async with listener:
        await listener.serve(lambda stream: _answer(stream, store))


async def _answer(stream: SocketStream, store: BaseStore) -> None:
    async with stream:
        head = b""
        try:
            with anyio.fail_after(READ_TIMEOUT):
                while b"\r\n\r\n" not in head and len(head) < MAX_HEAD:
                    head += await stream.receive(MAX_HEAD)
        except (TimeoutError, anyio.EndOfStream, anyio.BrokenResourceError, OSError):
            return
        status, body, ctype = await _route(head, store)
        reply = (
            f"HTTP/1.0 {status} {_REASONS[status]}\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        ).encode() + body
        try:
            await stream.send(reply)
        except (anyio.BrokenResourceError, OSError):
            return


async def _route(head: bytes, store: BaseStore) -> tuple[int, bytes, str]:
    """Status, body and content type for the request whose head is ``head``."""
    parts = head.split(b"\r\n", 1)[0].split()
    if len(parts) != 3:
        return _json(400, {"error": "malformed request line"})
    method, target = parts[0], parts[1].split(b"?", 1)[0]
    if target not in (b"/metrics", b"/healthz", b"/readyz"):
        return _json(404, {"error": "not found: try /metrics, /healthz or /readyz"})
    if method != b"GET":
        return _json(405, {"error": "only GET"})
    if target == b"/metrics":
        await metrics.refresh()
        return 200, metrics.render().encode(), metrics.CONTENT_TYPE
    if target == b"/readyz":
        reason = await store_unready(store)
        if reason is not None:
            return _json(503, {"status": "unavailable", "reason": reason})
    return _json(200, {"status": "ok"})


def _json(status: int, body: dict[str, str]) -> tuple[int, bytes, str]:
    return status, json.dumps(body).encode(), "application/json"
