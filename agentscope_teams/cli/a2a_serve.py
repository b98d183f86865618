"""``serve --a2a``: the lead agent of ``--specs`` published over A2A at ``/a2a/<name>/``.

Callers authenticate with the control plane's operator tokens (the one ``serve`` prints, or
``serve --create-operator-token``), or with the static tokens of ``--a2a-tokens FILE``; each call
runs as the (org, user) of its token. ``--a2a-public-card`` lets anyone read the Agent Card,
``--a2a-anonymous`` lets anyone call (as the anonymous user). See ``docs/a2a.md``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..store.base import BaseStore
from .common import CommandError, spec_directory
from .sandbox_option import sandbox_option

MOUNT = "/a2a"


def add_a2a_options(parser: argparse.ArgumentParser) -> None:
    """The options of ``serve --a2a``."""
    group = parser.add_argument_group("A2A (serve --a2a; needs the a2a extra)")
    group.add_argument("--a2a", action="store_true", help="also serve the lead agent over A2A")
    group.add_argument("--specs", metavar="DIR", type=Path, default=Path("specs"))
    group.add_argument("--model", metavar="MODEL", help="the lead's model, as for `run --model`")
    group.add_argument("--name", default="lead", help="the exposed agent's name (default lead)")
    group.add_argument(
        "--a2a-tokens",
        metavar="FILE",
        type=Path,
        help="also accept the bearer tokens of FILE (JSON/YAML: TOKEN: {user: USER, org: ORG})",
    )
    group.add_argument(
        "--a2a-anonymous", action="store_true", help="let callers without a token in (anonymous)"
    )
    group.add_argument(
        "--a2a-public-card", action="store_true", help="serve the Agent Card without a token"
    )


def _verifier(store: BaseStore, static: Any) -> Callable[[str], Awaitable[Any]]:
    from ..a2a_server import Caller
    from ..server import ControlPlaneAuthError
    from ..server.auth import authenticate

    async def verify(token: str) -> Caller | None:
        if static is not None and (found := await static(token)) is not None:
            return found  # type: ignore[no-any-return]
        try:
            principal = await authenticate(store, token)
        except ControlPlaneAuthError:
            return None
        return Caller(principal.user_id, principal.org_id) if principal.is_operator else None

    return verify


async def serve_with_a2a(
    args: argparse.Namespace,
    store: BaseStore,
    serve: Callable[[argparse.Namespace, BaseStore], Awaitable[int]],
) -> int:
    """Run ``serve(args, store)``; with ``--a2a``, the lead agent is open meanwhile and
    ``args.a2a_app`` is its A2A app (else None)."""
    args.a2a_app = None
    if not getattr(args, "a2a", False):
        return await serve(args, store)
    try:
        from ..a2a_server import ExposedAgent, StaticTokens, a2a_app
    except ImportError as exc:
        raise CommandError(
            f"serve --a2a needs the a2a extra: pip install 'agentscope-teams[a2a]' ({exc})"
        ) from None
    from ..compose import HarnessAgent
    from .run_cmd import LEAD_PROMPT, _model

    specs = spec_directory(args)
    static = StaticTokens.from_file(args.a2a_tokens) if args.a2a_tokens else None
    lead = HarnessAgent(
        args.name,
        _model(args.model, specs),
        LEAD_PROMPT,
        workspace=Path.cwd(),
        workspace_scope="shared",
        specs=specs,
        store=store,
        sandbox=sandbox_option(args) if hasattr(args, "sandbox") else None,
    )
    async with lead:
        args.a2a_app = a2a_app(
            [ExposedAgent(lead)],
            store,
            verifier=_verifier(store, static),
            anonymous=args.a2a_anonymous,
            public_card=args.a2a_public_card,
        )
        return await serve(args, store)


def mount_a2a(app: Any, args: argparse.Namespace) -> None:
    """Mount ``args.a2a_app`` (if any) at ``/a2a`` of the control plane ``app``."""
    if getattr(args, "a2a_app", None) is not None:
        app.mount(MOUNT, args.a2a_app)
        where = f"{MOUNT}/{args.name}/"
        print(
            f"A2A: agent {args.name} at {where} (card {where}.well-known/agent-card.json)",
            file=sys.stderr,
            flush=True,
        )
