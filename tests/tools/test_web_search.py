"""web_search against a local server speaking the Brave Search API: the request it sends, the
hits it returns, the domain filters, API errors as tool errors, and the tool only offered when a
provider is configured."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentscope_teams import WebAccessError
from agentscope_teams.tools.web import (
    BraveSearch,
    SearchHit,
    SearchProvider,
    SearchResults,
    WebConfig,
    filter_hits,
    unavailable_web_tools,
    web_search_tool,
    web_tools,
)

from .web_server import LoopbackSite, running

RESULTS = [
    {
        "title": "asyncio — <strong>Asynchronous</strong> I/O",
        "url": "https://docs.python.org/3/library/asyncio.html",
        "description": "<strong>asyncio</strong> is a library to write concurrent code &amp; more.",
    },
    {
        "title": "Asyncio tutorial",
        "url": "https://blog.example.com/asyncio",
        "description": "A tutorial.",
    },
    {"title": "Spam", "url": "https://spam.example.net/asyncio", "description": "Buy now."},
    {"title": "Mirror", "url": "https://python.org.evil.test/asyncio", "description": "Lookalike."},
]


@pytest.fixture
def brave() -> Iterator[tuple[LoopbackSite, WebConfig]]:
    with running() as site:
        site.search_results = RESULTS
        provider = BraveSearch(api_key="test-key", base_url=site.url(""), count=10)
        yield site, WebConfig(search=provider)


async def search(config: WebConfig, **arguments: object) -> SearchResults:
    tool = web_search_tool(config)
    data = await tool.func(**tool.validate(arguments))
    assert isinstance(data, SearchResults)
    return data


async def test_the_brave_request_and_its_hits(brave: tuple[LoopbackSite, WebConfig]) -> None:
    site, config = brave
    found = await search(config, query="python asyncio")
    [(query, token)] = site.search_requests
    assert query == {"q": ["python asyncio"], "count": ["10"]}
    assert token == "test-key"
    assert [h.url for h in found.hits] == [r["url"] for r in RESULTS]
    first = found.hits[0]
    assert first.title == "asyncio — Asynchronous I/O"
    assert first.snippet == "asyncio is a library to write concurrent code & more."
    text = found.render()
    assert "1. [asyncio — Asynchronous I/O](https://docs.python.org/3/library/asyncio.html)" in text


async def test_allowed_domains_keep_only_those_hosts_and_subdomains(
    brave: tuple[LoopbackSite, WebConfig],
) -> None:
    _, config = brave
    found = await search(config, query="asyncio", allowed_domains=["python.org", "example.com"])
    assert [h.url for h in found.hits] == [RESULTS[0]["url"], RESULTS[1]["url"]]
    assert found.dropped == 2  # the lookalike python.org.evil.test is not a subdomain


async def test_blocked_domains_drop_those_hosts(brave: tuple[LoopbackSite, WebConfig]) -> None:
    _, config = brave
    found = await search(
        config, query="asyncio", blocked_domains=["https://example.net/", "evil.test"]
    )
    assert [h.url for h in found.hits] == [RESULTS[0]["url"], RESULTS[1]["url"]]


def test_filter_drops_hits_without_an_http_url() -> None:
    hits = [
        SearchHit(title="a", url="javascript:alert(1)"),
        SearchHit(title="b", url="https://ok.example/"),
    ]
    assert [h.title for h in filter_hits(hits)] == ["b"]


@pytest.mark.parametrize(
    ("status", "hint"), [(401, "BRAVE_API_KEY"), (429, "rate limited"), (500, "")]
)
async def test_api_errors_are_tool_errors(
    brave: tuple[LoopbackSite, WebConfig], status: int, hint: str
) -> None:
    site, config = brave
    site.search_status = status
    with pytest.raises(WebAccessError) as caught:
        await search(config, query="asyncio")
    assert (caught.value.reason, caught.value.status) == ("search_failed", status)
    assert f"HTTP {status}" in str(caught.value) and hint in str(caught.value)


async def test_an_unreachable_provider_is_a_tool_error() -> None:
    with running() as site:
        base = site.url("")
    config = WebConfig(search=BraveSearch(api_key="k", base_url=base))
    with pytest.raises(WebAccessError) as caught:
        await search(config, query="asyncio")
    assert caught.value.reason == "search_failed"


async def test_a_one_letter_query_is_refused(brave: tuple[LoopbackSite, WebConfig]) -> None:
    site, config = brave
    from agentscope_teams import ToolError

    with pytest.raises(ToolError, match="at least 2"):
        await search(config, query="a")
    assert site.search_requests == []


def test_web_search_is_offered_only_with_a_provider() -> None:
    assert [t.name for t in web_tools(WebConfig())] == ["web_fetch"]
    assert "BRAVE_API_KEY" in unavailable_web_tools(WebConfig())["web_search"]
    configured = WebConfig(search=BraveSearch(api_key="k"))
    assert [t.name for t in web_tools(configured)] == ["web_fetch", "web_search"]
    assert unavailable_web_tools(configured) == {}


def test_the_provider_comes_from_the_environment() -> None:
    config = WebConfig.from_env(
        {"BRAVE_API_KEY": "from-env", "AGENTSCOPE_TEAMS_WEB_ALLOW_PRIVATE": "10.0.0.0/8, wiki"}
    )
    assert isinstance(config.search, BraveSearch) and config.search.api_key == "from-env"
    assert config.allow_private == ("10.0.0.0/8", "wiki")
    assert WebConfig.from_env({}).search is None


async def test_any_search_provider_plugs_in() -> None:
    class Canned:
        name = "canned"

        async def search(self, query: str) -> list[SearchHit]:
            return [SearchHit(title=query, url="https://a.example/")]

    assert isinstance(Canned(), SearchProvider)
    found = await search(WebConfig(search=Canned()), query="hello")
    assert found.provider == "canned" and found.hits[0].title == "hello"


def test_both_tools_are_read_only_and_ask_by_default() -> None:
    for t in web_tools(WebConfig(search=BraveSearch(api_key="k"))):
        assert t.read_only and t.requires_confirmation, t.name


def test_web_fetch_is_not_offered_without_the_web_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "markdownify", None)  # as if not installed
    assert web_tools(WebConfig()) == ()
    assert "agentscope-teams[web]" in unavailable_web_tools(WebConfig())["web_fetch"]
