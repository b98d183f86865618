"""``agentscope-teams serve``: the control plane (HTTP API, event streams, dashboard) over a store.

Identity comes only from tokens. At startup the server issues an operator token for ``--user`` /
``--org`` (valid ``--token-ttl`` seconds, 24 h by default) and prints it once, with the dashboard
link; ``--create-operator-token`` only issues one (no expiry unless ``--token-ttl``), prints it and
exits, for provisioning. Members get their tokens from the API when they are spawned.

On SIGTERM or SIGINT the server drains: it stops accepting connections, ``/readyz`` answers 503,
event streams end, and requests already running get up to ``--drain-seconds`` to finish; then it
exits 0 (a second SIGINT stops it at once).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import ipaddress
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from ..store.base import MAX_TTL, BaseStore
from ..store.expiry import SWEEP_SECONDS
from ..store.url import redact_url
from .a2a_serve import check_a2a_options
from .common import (
    SubParsers,
    add_command,
    add_identity_options,
    port_number,
    store_url,
    who,
    with_store,
)
from .heap import freeze_startup_heap
from .serve_agents import add_agent_options, mount_agents, serve_with_agents

EXAMPLES = (
    "agentscope-teams serve --store redis://localhost:6379/0 --user alice --org acme",
    "agentscope-teams serve --store file:///srv/teams --host 0.0.0.0 --port 8765 --user alice",
    "agentscope-teams serve --store redis://localhost:6379/0 --create-operator-token --user bob",
)
STARTUP_TOKEN_TTL = 24 * 3600.0
#: Default bound on the requests a stopping server waits for (under Kubernetes' default 30 s
#: termination grace period).
DRAIN_SECONDS = 25.0

#: The trace page of an OTLP UI with a ``{trace_id}`` placeholder, linked from the dashboard.
TRACE_URL_ENV = "AGENTSCOPE_TEAMS_TRACE_URL"


def register(subparsers: SubParsers) -> None:
    parser = add_command(
        subparsers,
        "serve",
        help="run the control plane: HTTP API, live event streams and the web dashboard",
        description="Serve the Agent Teams API over HTTP (OpenAPI at /openapi.json) and a live "
        "dashboard at /, backed by the store named by --store. Every request is authenticated by "
        "a bearer token; an operator token is printed at startup.",
        examples=EXAMPLES,
        store_required=True,
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=port_number,
        default=8765,
        help="port to bind; 0 picks a free one (default 8765)",
    )
    add_identity_options(parser)
    parser.add_argument(
        "--create-operator-token",
        action="store_true",
        help="issue an operator token for --user/--org, print it and exit (no server)",
    )
    parser.add_argument(
        "--token-ttl",
        metavar="SECONDS",
        type=float,
        help="lifetime of the issued operator token (default: 24 h for the startup token, "
        "no expiry with --create-operator-token)",
    )
    parser.add_argument(
        "--task-lease",
        "--lease-seconds",  # the earlier name
        dest="task_lease",
        metavar="SECONDS",
        type=float,
        default=60.0,
        help="task lease of claims made through the API (default 60)",
    )
    parser.add_argument(
        "--drain-seconds",
        metavar="SECONDS",
        type=float,
        default=DRAIN_SECONDS,
        help="on SIGTERM, how long running requests may take to finish before the server exits "
        f"(default {DRAIN_SECONDS:g})",
    )
    _add_expiry_sweep(parser)
    parser.add_argument(
        "--access-log",
        action="store_true",
        help="log every request (off by default: URLs may carry short-lived stream tickets)",
    )
    add_agent_options(parser)
    parser.set_defaults(handler=handle)


def _add_expiry_sweep(parser: argparse.ArgumentParser) -> None:
    """``--expiry-sweep SECONDS``: how often :func:`~..store.expiry.sweep_expired` runs."""
    parser.add_argument(
        "--expiry-sweep",
        metavar="SECONDS",
        type=float,
        default=SWEEP_SECONDS,
        help="how often expired entries (ended A2A tasks, tokens, leases) are removed from a SQL "
        f"or file store to free their space (default {SWEEP_SECONDS:g}; Redis frees them itself)",
    )


def handle(args: argparse.Namespace) -> int:
    from ..teams.rules.limits import config_lease

    if args.token_ttl is not None and not 0 < args.token_ttl <= MAX_TTL:
        raise ValueError(
            f"--token-ttl must be a number of seconds > 0 and at most {MAX_TTL} (100 years), "
            f"got {args.token_ttl:g}; leave it out for the default"
        )
    if not 0 <= args.drain_seconds <= 3600:
        raise ValueError("--drain-seconds must be a number of seconds in 0..3600")
    if not 0 < args.expiry_sweep < float("inf"):
        raise ValueError("--expiry-sweep must be a positive number of seconds")
    config_lease(args.task_lease, "--task-lease")  # refused now, not as HTTP 500 on every claim
    check_a2a_options(args)  # a bad --public-url / --a2a-task-retention before anything starts
    if args.create_operator_token:
        return with_store(args, lambda store: _create_token(args, store))
    return with_store(args, lambda store: serve_with_agents(args, store, _serve))


async def _create_token(args: argparse.Namespace, store: BaseStore) -> int:
    from ..server import issue_operator_token

    token = await issue_operator_token(
        store, args.org, args.user, ttl=args.token_ttl, label="create-operator-token"
    )
    lifetime = f"valid {args.token_ttl:g} s" if args.token_ttl else "no expiry"
    print(f"operator token for {who(args.user, args.org)} ({lifetime}; shown once):", flush=True)
    print(token, flush=True)
    return 0


def _bind(host: str, port: int) -> socket.socket:
    try:
        return socket.create_server((host, port))
    except OSError as exc:
        fix = (
            "pass a --host that is a name or address of this machine (127.0.0.1, 0.0.0.0, ::)"
            if (exc.errno or 0) < 0 or exc.errno == errno.EADDRNOTAVAIL  # < 0: name lookup
            else "pick another --port (0 picks a free one) or stop the process using it"
        )
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; {fix}") from exc


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


async def _serve(args: argparse.Namespace, store: BaseStore) -> int:
    import uvicorn

    from ..server import create_app, issue_operator_token, request_shutdown

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            request_shutdown(app)
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            """Drain on SIGTERM / SIGINT and return (uvicorn's own re-raises the signal after
            draining, which makes the process end by the signal instead of exiting 0)."""
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            handled = (signal.SIGINT, signal.SIGTERM)
            before = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in before.items():
                    signal.signal(sig, handler)

    from .board_metrics import BoardGauges

    trace_url = os.environ.get(TRACE_URL_ENV) or None
    app = create_app(store, task_lease=args.task_lease, trace_url=trace_url)
    BoardGauges(store).install()  # open tasks by status (queue depth), members, teams
    mount_agents(app, args)  # serve --a2a / --mcp: the lead agent at /a2a, /mcp (serve_agents.py)
    sock = _bind(args.host, args.port)
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    base = f"http://{host}:{port}"
    ttl = STARTUP_TOKEN_TTL if args.token_ttl is None else args.token_ttl
    token = await issue_operator_token(store, args.org, args.user, ttl=ttl, label="serve")
    _announce(base, store_url(args), who(args.user, args.org), token, ttl)
    if not _is_loopback(args.host):
        print(
            f"warning: listening on {args.host} without TLS; put a TLS-terminating proxy in "
            "front so tokens never cross the network in clear text",
            file=sys.stderr,
            flush=True,
        )
    options: dict[str, Any] = {
        "timeout_graceful_shutdown": args.drain_seconds,
        "lifespan": "off",
    }
    config = uvicorn.Config(app, access_log=args.access_log, log_level="warning", **options)
    freeze_startup_heap()  # the app, its routes and the store exist: out of the collector's way
    tidy = asyncio.get_running_loop().create_task(_tidy(args, store))
    try:
        await Server(config).serve(sockets=[sock])
    finally:
        tidy.cancel()
        await asyncio.gather(tidy, return_exceptions=True)  # ended: its cancel is not ours
        sock.close()
    return 0


async def _tidy(args: argparse.Namespace, store: BaseStore) -> None:
    """While the server runs: the A2A task records of an older release get their TTL (once),
    and the store's expired entries are removed every ``--expiry-sweep`` seconds."""
    from ..store.expiry import sweep_expired

    a2a = getattr(args, "a2a_app", None)
    if a2a is not None:
        try:
            await a2a.backfill()
        except Exception as exc:  # the server serves all the same; the next start tries again
            print(f"warning: A2A task records were not given their TTL: {exc}", file=sys.stderr)
    await sweep_expired(store, every=args.expiry_sweep)


def _announce(base: str, url: str, owner: str, token: str, ttl: float) -> None:
    lines = [
        f"agentscope-teams control plane on {base} (store {redact_url(url)})",
        f"  API: {base}/api  OpenAPI: {base}/openapi.json",
        f"operator token for {owner} (valid {ttl / 3600:g} h; shown once):",
        f"  {token}",
        f"dashboard: {base}/?token={token}",
        "press Ctrl-C to stop",
    ]
    print("\n".join(lines), flush=True)
