"""Web search: the :class:`SearchProvider` interface, the Brave Search API provider, and the
domain filter ``web_search`` applies to every provider's results.

A provider turns a query into :class:`SearchHit` rows (title, URL, snippet). ``web_search`` then
keeps only hosts matching ``allowed_domains`` (when given) and drops hosts matching
``blocked_domains`` (a domain covers its subdomains, as in ``WebFetch(domain:…)`` rules), so the
filter holds whatever the provider does with the query. The filter applies to the results the
provider returned (up to :attr:`BraveSearch.count`); a narrow allowlist can leave few of them.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import BaseModel

from ...errors import WebAccessError
from .urls import host_in, parse_web_url


class SearchHit(BaseModel):
    """One search result."""

    title: str
    url: str
    snippet: str = ""


@runtime_checkable
class SearchProvider(Protocol):
    """A web search API. ``search`` returns the hits for ``query`` in ranking order and raises
    :class:`~agentscope_teams.errors.WebAccessError` (``search_failed``) when the API fails."""

    name: str

    async def search(self, query: str) -> list[SearchHit]: ...


def filter_hits(
    hits: Sequence[SearchHit], allowed: Sequence[str] = (), blocked: Sequence[str] = ()
) -> list[SearchHit]:
    """``hits`` whose host is in ``allowed`` (if any) and not in ``blocked``; hits without a
    valid http(s) URL are dropped."""
    allowed, blocked = [str(d) for d in allowed], [str(d) for d in blocked]
    kept: list[SearchHit] = []
    for hit in hits:
        try:
            host = parse_web_url(hit.url).host
        except WebAccessError:
            continue
        if (allowed and not host_in(host, allowed)) or host_in(host, blocked):
            continue
        kept.append(hit)
    return kept


_TAG = re.compile(r"<[^>]+>")


def _plain(text: Any) -> str:
    return html.unescape(_TAG.sub("", str(text or ""))).strip()


@dataclass(frozen=True)
class BraveSearch:
    """The Brave Search web API: ``GET {base_url}/res/v1/web/search?q=…&count=…`` with the key in
    ``X-Subscription-Token``; hits from ``web.results[]`` (``title``, ``url``, ``description``,
    whose ``<strong>`` highlighting is removed).

    ``api_key`` defaults to nothing: :meth:`WebConfig.from_env` reads ``BRAVE_API_KEY``.
    ``base_url`` is overridable (tests point it at a local server); ``count`` is at most 20 (the
    API's limit).
    """

    API_KEY_ENV: ClassVar[str] = "BRAVE_API_KEY"
    name: ClassVar[str] = "brave"

    api_key: str
    base_url: str = "https://api.search.brave.com"
    count: int = 20
    timeout: float = 15.0

    def __post_init__(self) -> None:
        if not 1 <= self.count <= 20:
            raise ValueError(f"BraveSearch count must be 1-20, got {self.count}")

    @property
    def endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/res/v1/web/search"

    async def search(self, query: str) -> list[SearchHit]:
        import httpx

        headers = {"Accept": "application/json", "X-Subscription-Token": self.api_key}
        params: dict[str, str | int] = {"q": query, "count": self.count}
        try:
            async with httpx.AsyncClient(timeout=self.timeout, trust_env=False) as client:
                response = await client.get(self.endpoint, params=params, headers=headers)
        except httpx.HTTPError as exc:
            raise self._failed(
                f"cannot reach the Brave Search API ({type(exc).__name__})"
            ) from None
        if response.status_code != 200:
            raise self._failed(
                f"the Brave Search API answered HTTP {response.status_code}"
                + _brave_detail(response),
                response.status_code,
            )
        try:
            results = response.json().get("web", {}).get("results", [])
            return [
                SearchHit(
                    title=_plain(r.get("title")),
                    url=str(r["url"]),
                    snippet=_plain(r.get("description")),
                )
                for r in results
                if isinstance(r, dict) and r.get("url")
            ]
        except (ValueError, AttributeError) as exc:
            raise self._failed(f"the Brave Search API sent a malformed answer ({exc})") from None

    def _failed(self, message: str, status: int | None = None) -> WebAccessError:
        hint = {
            401: "; check BRAVE_API_KEY",
            403: "; check BRAVE_API_KEY and the plan",
            429: "; rate limited, try again later",
        }.get(status or 0, "")
        return WebAccessError(
            message + hint, url=self.endpoint, reason="search_failed", status=status
        )


def _brave_detail(response: Any) -> str:
    try:
        error = response.json().get("error", {})
        detail = error.get("detail") or error.get("code")
    except (ValueError, AttributeError):
        return ""
    return f" ({detail})" if detail else ""
