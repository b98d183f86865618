"""Who an A2A request comes from: its credentials, checked before the SDK sees the request.

A :data:`Verifier` turns a bearer token into a :class:`Caller` (org, user) or None. The ``serve``
command passes one over the control plane's tokens; :class:`StaticTokens` is one over a file of
tokens chosen by the operator. :func:`guarded` wraps the SDK's ASGI app: a request with a token the
verifier does not know, or with an ``Authorization`` header that is not ``Bearer TOKEN``, gets 401
saying which; one with no credentials at all gets 401 too, unless the operator allowed anonymous
callers. The caller a known token acts as is put in the ASGI scope, where
:class:`CallerContextBuilder` makes it the SDK's user. Nothing in the request body can choose the
caller, and wrong credentials never fall back to the anonymous caller.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from a2a.auth.user import User
from a2a.server.context import ServerCallContext
from a2a.server.routes import DefaultServerCallContextBuilder

from ..errors import ConfigurationError
from ..token_file import (
    SEND_A_TOKEN,
    TokenDigests,
    read_token_file,
    refuse_unauthenticated,
    verify_credentials,
)

log = logging.getLogger(__name__)
#: Where :func:`guarded` puts the caller in the ASGI scope.
SCOPE_KEY = "agentscope_teams.a2a_caller"


@dataclass(frozen=True)
class Caller:
    """The (org, user) a request acts as; ``user_id`` None is an anonymous caller."""

    user_id: str | None
    org_id: str | None = None

    @property
    def owner(self) -> str:
        """The SDK's owner string (task stores scope by it); unambiguous for any ids."""
        return json.dumps([self.org_id, self.user_id])


#: A bearer token -> its caller, or None when the token is not known.
Verifier = Callable[[str], Awaitable[Caller | None]]


class StaticTokens(TokenDigests[Caller]):
    """Operator-chosen bearer tokens and the caller each acts as; only their SHA-256 is kept.

    The file is the format of ``mcp-serve --tokens`` (:mod:`agentscope_teams.token_file`).
    """

    @classmethod
    def from_file(cls, path: Path) -> StaticTokens:
        return cls({t: Caller(user, org) for t, (user, org) in read_token_file(path).items()})

    async def __call__(self, token: str) -> Caller | None:
        return self.find(token)


class CallerUser(User):
    """The SDK's user for a :class:`Caller`."""

    def __init__(self, caller: Caller) -> None:
        self.caller = caller

    @property
    def is_authenticated(self) -> bool:
        return self.caller.user_id is not None

    @property
    def user_name(self) -> str:
        return self.caller.owner


class CallerContextBuilder(DefaultServerCallContextBuilder):
    """Makes the caller :func:`guarded` found the SDK's user of the call."""

    def build_user(self, request: Any) -> User:
        caller = request.scope.get(SCOPE_KEY)
        return CallerUser(caller if isinstance(caller, Caller) else Caller(None))


def caller_of(context: ServerCallContext) -> Caller:
    """The caller of an SDK call (anonymous when the request carried none)."""
    user = context.user
    return user.caller if isinstance(user, CallerUser) else Caller(None)


def guarded(
    app: Any, verifier: Verifier | None, *, anonymous: bool = False, public_card: bool = False
) -> Any:
    """``app`` behind bearer authentication: 401 for a request whose token ``verifier`` does not
    know or whose ``Authorization`` header is malformed, always; 401 for a request without
    credentials unless ``anonymous`` (then it runs as the anonymous caller), or ``public_card`` and
    it reads the Agent Card; 503 (``Retry-After``) when ``verifier`` fails with a library error
    (its store is away), told in the error's public form."""
    if verifier is None and not anonymous:
        raise ConfigurationError(
            "an A2A server needs a token verifier (the control plane's tokens or a token file); "
            "pass anonymous=True only to let anyone call the agents"
        )

    async def wrapper(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        answered, caller = await verify_credentials(scope, send, verifier, SEND_A_TOKEN)
        if answered:
            return
        if caller is None:
            card = str(scope.get("path", "")).endswith("/.well-known/agent-card.json")
            if not (anonymous or (public_card and card)):
                await refuse_unauthenticated(
                    send, f"the request has no credentials; {SEND_A_TOKEN}"
                )
                return
            caller = Caller(None)
        await app({**scope, SCOPE_KEY: caller}, receive, send)

    return wrapper
