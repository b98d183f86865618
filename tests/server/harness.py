"""A real control plane for tests: uvicorn in a background thread (own event loop) over a store URL."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import uvicorn

from agentscope_teams.server import create_app, issue_operator_token, request_shutdown
from agentscope_teams.store import BaseStore, store_from_url

#: Fast polling so event-stream tests do not wait.
FAST = {"poll_interval": 0.05, "heartbeat_seconds": 0.3}


@dataclass
class Served:
    """A running server: its base URL and an operator token per name given to :func:`serve`."""

    base_url: str
    store_url: str
    tokens: dict[str, str]
    _server: uvicorn.Server = field(repr=False)
    #: The store the app serves (what ``wrap`` made of the opened store).
    store: Any = field(default=None, repr=False)

    def url(self, path: str) -> str:
        return self.base_url + path


@contextmanager
def serve(
    store_url: str,
    operators: dict[str, tuple[str | None, str | None]],
    *,
    wrap: Callable[[BaseStore], Any] | None = None,
    **options: Any,
) -> Iterator[Served]:
    """Run the app over ``store_url``; ``operators`` maps a name to the (org, user) of a token;
    ``wrap`` makes the store the app serves of the opened one (e.g. to inject a race)."""
    sock = socket.create_server(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    ready, failed = threading.Event(), []
    holder: dict[str, Any] = {}

    async def main() -> None:
        async with store_from_url(store_url) as opened:
            store = cast(BaseStore, opened)
            holder["tokens"] = {
                name: await issue_operator_token(store, org, user, ttl=3600)
                for name, (org, user) in operators.items()
            }
            served_store = holder["store"] = store if wrap is None else wrap(store)
            app = holder["app"] = create_app(served_store, **{**FAST, **options})
            config = uvicorn.Config(
                app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1
            )
            server = holder["server"] = uvicorn.Server(config)
            async with anyio.create_task_group() as tg:
                tg.start_soon(server.serve, [sock])
                while not server.started:  # noqa: ASYNC110 - uvicorn has no "started" event
                    await anyio.sleep(0.01)
                ready.set()

    def run() -> None:
        try:
            anyio.run(main)
        except BaseException as exc:
            failed.append(exc)
            ready.set()

    thread = threading.Thread(target=run, name="control-plane", daemon=True)
    thread.start()
    if not ready.wait(30) or failed:
        raise RuntimeError(f"the test server did not start: {failed!r}")
    served = Served(
        f"http://127.0.0.1:{port}", store_url, holder["tokens"], holder["server"], holder["store"]
    )
    try:
        yield served
    finally:
        request_shutdown(holder["app"])
        served._server.should_exit = True
        thread.join(15)
        sock.close()
        if failed:
            raise failed[0]
