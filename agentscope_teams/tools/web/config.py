"""``WebConfig``: the limits, the SSRF allowlist and the search provider of the web tools.

Environment (read by :meth:`WebConfig.from_env`, the default of :func:`~.factory.web_tools`):

- ``AGENTSCOPE_TEAMS_WEB_ALLOW_PRIVATE``: comma-separated hosts and CIDR networks ``web_fetch`` may
  reach although they are private (``wiki.corp,10.1.2.0/24``);
- ``BRAVE_API_KEY``: turns on ``web_search`` with the Brave Search API.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .search import BraveSearch, SearchProvider
from .ssrf import AddressGuard, Resolver, system_resolver

if TYPE_CHECKING:
    import httpx

ALLOW_PRIVATE_ENV = "AGENTSCOPE_TEAMS_WEB_ALLOW_PRIVATE"

MAX_BYTES = 5_000_000
"""Bytes of a response body read at most (after decompression); the rest is not downloaded."""
MAX_CHARS = 80_000
"""Characters of a page's Markdown returned at most; longer pages are cut with a note (below the
toolkit's own 100,000-character cap on any tool result, so the note is always seen)."""
TIMEOUT = 30.0
"""Seconds for a whole fetch: every redirect hop and the body."""
MAX_REDIRECTS = 5
"""Same-host redirects followed per fetch."""

Summarizer = Callable[[str, str, str], Awaitable[str]]
"""``(url, prompt, markdown) -> answer``: applies a fetch's ``prompt`` to the page (e.g. with a
small model); without one, ``web_fetch`` returns the page itself with the prompt beside it."""


@dataclass(frozen=True)
class WebConfig:
    """How the web tools behave; every field has a safe default.

    ``transport`` builds the ``httpx`` transport of one fetch (tests pass one that records or
    fakes requests); by default a fresh ``httpx.AsyncHTTPTransport`` per call, verifying TLS with
    ``verify`` (True: the system's CAs; or an ``ssl.SSLContext``), ignoring proxy variables so
    the checked address is the one connected to. ``upgrade_http`` turns ``http://`` into
    ``https://`` except for hosts on the operator's allowlist (``allow_private``; internal
    services often speak plain HTTP).
    """

    allow_private: Sequence[str] = ()
    resolver: Resolver = system_resolver
    max_bytes: int = MAX_BYTES
    max_chars: int = MAX_CHARS
    timeout: float = TIMEOUT
    max_redirects: int = MAX_REDIRECTS
    upgrade_http: bool = True
    verify: ssl.SSLContext | bool = True
    transport: Callable[[], httpx.AsyncBaseTransport] | None = None
    summarizer: Summarizer | None = None
    search: SearchProvider | None = None
    user_agent: str = "agentscope-teams-web-fetch/1 (+https://pypi.org/project/agentscope-teams/)"
    guard: AddressGuard = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.max_chars < 1 or self.max_redirects < 0:
            raise ValueError("max_bytes and max_chars must be >= 1 and max_redirects >= 0")
        if not self.timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds, got {self.timeout!r}")
        object.__setattr__(self, "allow_private", tuple(self.allow_private))
        object.__setattr__(self, "guard", AddressGuard(self.resolver, self.allow_private))

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> WebConfig:
        """A config from the environment (module docstring); ``overrides`` set other fields."""
        env = os.environ if env is None else env
        allow = [a.strip() for a in env.get(ALLOW_PRIVATE_ENV, "").split(",") if a.strip()]
        kwargs: dict[str, object] = {"allow_private": allow}
        if key := env.get(BraveSearch.API_KEY_ENV, "").strip():
            kwargs["search"] = BraveSearch(api_key=key)
        kwargs.update(overrides)
        return cls(**kwargs)  # type: ignore[arg-type]
