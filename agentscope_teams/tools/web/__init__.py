"""The web tools: ``web_fetch`` (Claude Code's ``WebFetch``) and ``web_search`` (``WebSearch``).

See ``docs/tools-and-sandboxing.md`` ("WebFetch and WebSearch"): :func:`web_tools` builds them
from a :class:`WebConfig`; :mod:`.ssrf` is the guard on the addresses a fetch may reach;
:mod:`.urls` parses URLs and matches ``WebFetch(domain:…)`` rules.
"""

from __future__ import annotations

from .config import (
    ALLOW_PRIVATE_ENV,
    MAX_BYTES,
    MAX_CHARS,
    MAX_REDIRECTS,
    TIMEOUT,
    Summarizer,
    WebConfig,
)
from .convert import content_kind, html_to_markdown, markdown_available
from .factory import (
    WEB_FETCH,
    WEB_SEARCH,
    model_summarizer,
    unavailable_web_tools,
    web_fetch_tool,
    web_search_tool,
    web_tools,
)
from .fetch import fetch_page
from .output import SearchResults, WebPage
from .search import BraveSearch, SearchHit, SearchProvider, filter_hits
from .ssrf import AddressGuard, Resolver, address_problem, system_resolver
from .urls import WebUrl, domain_pattern, host_matches, parse_web_url, web_rule_matches

__all__ = [
    "ALLOW_PRIVATE_ENV",
    "MAX_BYTES",
    "MAX_CHARS",
    "MAX_REDIRECTS",
    "TIMEOUT",
    "WEB_FETCH",
    "WEB_SEARCH",
    "AddressGuard",
    "BraveSearch",
    "Resolver",
    "SearchHit",
    "SearchProvider",
    "SearchResults",
    "Summarizer",
    "WebConfig",
    "WebPage",
    "WebUrl",
    "address_problem",
    "content_kind",
    "domain_pattern",
    "fetch_page",
    "filter_hits",
    "host_matches",
    "html_to_markdown",
    "markdown_available",
    "model_summarizer",
    "parse_web_url",
    "system_resolver",
    "unavailable_web_tools",
    "web_fetch_tool",
    "web_rule_matches",
    "web_search_tool",
    "web_tools",
]
