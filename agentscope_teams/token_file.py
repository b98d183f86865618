"""Bearer tokens an operator lists in a file, each acting as one (org, user): the one reader of that
file format, shared by ``mcp-serve --tokens`` and the A2A server's ``--a2a-tokens``; and the bearer
gate both servers put before their SDK (:func:`verify_credentials`).

The file (JSON or YAML) maps each token to ``{user: USER, org: ORG}`` (``org`` optional). Only the
SHA-256 of each token is kept in memory, and lookups compare digests in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar

import yaml

from .context import RuntimeContext
from .errors import AgentScopeTeamsError, ConfigurationError, public_message
from .text_files import read_text_file

T = TypeVar("T")
log = logging.getLogger(__name__)
#: What a caller refused by :func:`verify_credentials` (or for sending none) is told to send.
SEND_A_TOKEN = (
    "send 'Authorization: Bearer TOKEN' with a token the operator gave you (an operator token of "
    "the control plane, or one of the server's token file)"
)
#: Seconds a caller is told to wait (``Retry-After``) when its credentials could not be checked.
RETRY_AFTER_SECONDS = 5


def read_token_file(path: Path) -> dict[str, tuple[str, str | None]]:
    """``token -> (user, org)`` from ``path``; a :class:`ConfigurationError` naming the file and
    what is wrong when it cannot be read or an entry is not ``{user: USER, org: ORG}``."""
    data = _load(path)
    if not isinstance(data, dict) or not data:
        raise ConfigurationError(
            f"token file {path}: expected a mapping TOKEN -> {{user: USER, org: ORG}}"
        )
    tokens: dict[str, tuple[str, str | None]] = {}
    for token, who in data.items():
        if not isinstance(who, dict) or not isinstance(who.get("user"), str):
            raise ConfigurationError(
                f"token file {path}: an entry is not {{user: USER, org: ORG}}; give each token a user"
            )
        org = who.get("org") if isinstance(who.get("org"), str) else None
        RuntimeContext(session_id="check", user_id=who["user"], org_id=org)  # valid ids
        tokens[str(token)] = (who["user"], org)
    return tokens


def _load(path: Path) -> Any:
    """The file's YAML (or JSON) document; a problem is named by file and line only: the text
    around it would be a token."""
    text = read_text_file(path, "the token file")
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise ConfigurationError(
            f"token file {path}{where}: invalid YAML; fix the file: one "
            "TOKEN: {user: USER, org: ORG} per line"
        ) from None


class TokenDigests(Generic[T]):
    """Tokens kept as their SHA-256 only, each mapped to whom it acts as."""

    def __init__(self, tokens: Mapping[str, T]) -> None:
        self._by_digest = {_digest(t): who for t, who in tokens.items()}

    def find(self, token: str) -> T | None:
        """Whom ``token`` acts as, or None when it is not known (constant-time comparisons)."""
        digest = _digest(token)
        found: T | None = None
        for known, who in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                found = who
        return found


#: What is wrong with an ``Authorization`` header that is not ``Bearer TOKEN``.
MALFORMED_AUTHORIZATION = (
    "the Authorization header is not 'Bearer TOKEN' (another scheme, or no token after Bearer)"
)


def presented_credentials(scope: Mapping[str, Any]) -> tuple[bool, str | None]:
    """Whether an ASGI request carries an ``Authorization`` header, and its bearer token: ``(False,
    None)`` for no credentials, ``(True, TOKEN)`` for ``Bearer TOKEN``, ``(True, None)`` for a
    header that is not ``Bearer TOKEN`` (malformed credentials, never to be taken for none)."""
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            header: str = value.decode("latin-1")
            scheme, _, token = header.strip().partition(" ")
            ok = scheme.lower() == "bearer" and token.strip()
            return True, token.strip() if ok else None
    return False, None


def bearer_token(scope: Mapping[str, Any]) -> str | None:
    """The token of an ASGI request's ``Authorization: Bearer TOKEN`` header, else None."""
    for name, value in scope.get("headers") or ():
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


async def refuse_unauthenticated(
    send: Callable[[dict[str, Any]], Awaitable[None]], reason: str | None = None
) -> None:
    """Answer an ASGI request with 401 and ``WWW-Authenticate: Bearer``; the body's ``error`` is
    ``reason`` (what was wrong and what to send) when given."""
    text = reason or "a known bearer token is required (Authorization: Bearer)"
    await send_error(send, 401, text, [(b"www-authenticate", b"Bearer")])


async def verify_credentials(
    scope: Mapping[str, Any],
    send: Callable[[dict[str, Any]], Awaitable[None]],
    verifier: Callable[[str], Awaitable[T | None]] | None,
    hint: str,
) -> tuple[bool, T | None]:
    """Check an ASGI request's credentials: ``(answered, who)``. ``answered`` when the request was
    refused here: 401 for a malformed ``Authorization`` header or a token ``verifier`` does not
    know (wrong credentials never count as none), 503 with ``Retry-After`` when ``verifier``
    fails with a library error (its store is away). Else ``who`` is the token's identity, or None
    for a request with no credentials, which the caller admits as anonymous or refuses. ``hint``
    tells a refused caller what to send."""
    present, token = presented_credentials(scope)
    if present and token is None:
        await refuse_unauthenticated(send, f"{MALFORMED_AUTHORIZATION}; {hint}")
        return True, None
    if token is None:
        return False, None
    try:
        who = await verifier(token) if verifier is not None else None
    except AgentScopeTeamsError as exc:
        log.warning("cannot check a bearer token: %s: %s", type(exc).__name__, exc)
        text = (
            f"the credentials could not be checked: {public_message(exc)}; retry in "
            f"{RETRY_AFTER_SECONDS} s"
        )
        await send_error(send, 503, text, [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())])
        return True, None
    if who is None:
        reason = "the bearer token is not known (wrong, revoked or expired)"
        await refuse_unauthenticated(send, f"{reason}; {hint}")
        return True, None
    return False, who


async def send_error(
    send: Callable[[dict[str, Any]], Awaitable[None]],
    status: int,
    text: str,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    """Answer an ASGI request with ``status`` and the JSON body ``{"error": text}``."""
    body = json.dumps({"error": text})
    headers = [(b"content-type", b"application/json"), *(headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body.encode()})


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
