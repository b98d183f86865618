"""web_fetch against a real loopback HTTP server (opened through the operator allowlist): what it
reads, what it refuses by name, and its caps (bytes, characters, redirects, time), asserted by
counts and error codes, never by durations; and an agent reading a page end to end."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentscope_teams import HarnessAgent, InMemoryStore, ScriptedModel, WebAccessError
from agentscope_teams.context import RuntimeContext
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.tools import PermissionEngine, parse_rule
from agentscope_teams.tools.web import (
    WebConfig,
    WebPage,
    fetch_page,
    model_summarizer,
    web_fetch_tool,
)
from agentscope_teams.tools.web import fetch as fetch_module
from agentscope_teams.tools.web.config import ALLOW_PRIVATE_ENV

from .web_server import BIG, LoopbackSite, running


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with running() as s:
        yield s


def config(**kw: object) -> WebConfig:
    return WebConfig(allow_private=["127.0.0.1"], **kw)  # type: ignore[arg-type]


async def test_html_comes_back_as_markdown(site: LoopbackSite) -> None:
    page = await fetch_page(site.url("/page.html"), "What changed?", config())
    assert page.kind == "html" and page.status == 200
    assert "# Release notes" in page.content and "## Version 2.0" in page.content
    assert "The **widget** now spins twice as fast." in page.content
    assert "- faster\n- quieter" in page.content
    assert f"[Next page]({site.url('/next')})" in page.content  # links made absolute
    assert "SCRIPT_TEXT" not in page.content and "color: red" not in page.content
    text = page.render()
    assert "Question to answer from this page: What changed?" in text


@pytest.mark.parametrize(
    ("path", "kind", "expected"),
    [("/data.json", "json", '{"answer": 42}'), ("/notes.md", "markdown", "# Notes\n\n- one")],
)
async def test_json_and_markdown_come_back_as_they_are(
    site: LoopbackSite, path: str, kind: str, expected: str
) -> None:
    page = await fetch_page(site.url(path), "x", config())
    assert (page.kind, page.content) == (kind, expected)


@pytest.mark.parametrize(
    ("path", "named"),
    [
        ("/doc.pdf", "application/pdf"),
        ("/logo.png", "image/png"),
        ("/blob", "application/octet-stream"),
    ],
)
async def test_binary_types_are_refused_by_name(site: LoopbackSite, path: str, named: str) -> None:
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(site.url(path), "x", config())
    assert caught.value.reason == "unsupported_content"
    assert named in str(caught.value) and "HTML" in str(caught.value)


async def test_a_huge_body_is_cut_at_max_bytes(site: LoopbackSite) -> None:
    page = await fetch_page(
        site.url("/big"), "x", config(max_bytes=1_000_000, max_chars=10_000_000)
    )
    assert page.bytes_read == 1_000_000 and page.body_truncated
    assert len(page.content) == 1_000_000
    assert site.big_written < BIG  # the client stopped reading; the 20 MB were never all sent
    assert "only that much was downloaded" in page.render()


async def test_long_content_is_cut_to_max_chars_with_a_note(site: LoopbackSite) -> None:
    page = await fetch_page(site.url("/big"), "x", config(max_bytes=50_000, max_chars=1_000))
    assert len(page.content) == 1_000 and page.total_chars == 50_000
    assert "only the first 1,000 of 50,000 characters are shown" in page.render()


async def test_a_redirect_loop_stops_after_max_redirects(site: LoopbackSite) -> None:
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(site.url("/loop"), "x", config(max_redirects=3))
    assert caught.value.reason == "too_many_redirects"
    assert site.hits["/loop"] == 4  # the first request and 3 redirects, then it stopped


async def test_a_same_host_redirect_is_followed(site: LoopbackSite) -> None:
    page = await fetch_page(site.url("/moved"), "x", config())
    assert page.final_url == site.url("/page.html") and page.url == site.url("/moved")
    assert "## Version 2.0" in page.content


async def test_a_redirect_to_another_host_is_returned_and_the_next_call_refused(
    site: LoopbackSite,
) -> None:
    """/away redirects to the cloud metadata address: not followed; fetching it is refused."""
    page = await fetch_page(site.url("/away"), "x", config())
    assert page.redirect_to == "http://169.254.169.254/latest/meta-data/"
    assert "call web_fetch again" in page.render()
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(page.redirect_to, "x", config())
    assert caught.value.reason == "blocked_address"


async def test_a_redirect_to_a_host_off_the_allowlist_is_refused(site: LoopbackSite) -> None:
    """The server redirects to another loopback address (127.0.0.2) the operator did not open."""
    site.routes["/elsewhere"] = lambda h, q: h._send(
        302, b"", "text/plain", Location=f"http://127.0.0.2:{site.port}/page.html"
    )
    page = await fetch_page(site.url("/elsewhere"), "x", config())
    assert page.redirect_to == f"http://127.0.0.2:{site.port}/page.html"
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(page.redirect_to, "x", config())
    assert caught.value.reason == "blocked_address"
    assert site.hits["/page.html"] == 0


async def test_a_slow_body_hits_the_time_cap(site: LoopbackSite) -> None:
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(site.url("/slow"), "x", config(timeout=0.3))
    assert caught.value.reason == "timeout"


async def test_an_http_error_is_a_tool_error_with_its_status(site: LoopbackSite) -> None:
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(site.url("/missing"), "x", config())
    assert (caught.value.reason, caught.value.status) == ("http_status", 404)


async def test_loopback_is_refused_without_the_allowlist(site: LoopbackSite) -> None:
    """Control for every test above: the same server is unreachable by default."""
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(site.url("/page.html"), "x", WebConfig())
    assert caught.value.reason == "blocked_address"
    assert site.hits["/page.html"] == 0


async def test_a_summarizer_answers_the_prompt(site: LoopbackSite) -> None:
    model = ScriptedModel(["It spins twice as fast."])
    tool = web_fetch_tool(config(summarizer=model_summarizer(model)))
    out = await tool.invoke({"url": site.url("/page.html"), "prompt": "How fast?"})
    assert out.endswith("Question: How fast?\n\nIt spins twice as fast.")
    [request] = model.requests
    asked = request.messages[0].get_text_content() or ""
    assert "## Version 2.0" in asked and asked.endswith("Question: How fast?")


async def test_an_agent_reads_a_page_through_web_fetch(
    site: LoopbackSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A HarnessAgent with its built-in tools (the allowlist from the environment) calls web_fetch
    under a domain rule; the model gets the page's Markdown."""
    monkeypatch.setenv(ALLOW_PRIVATE_ENV, "127.0.0.1")
    url = site.url("/page.html")
    model = ScriptedModel(
        [ScriptedModel.tool_call("web_fetch", {"url": url, "prompt": "What changed?"}), "Faster."]
    )
    agent = HarnessAgent(
        "lead",
        model,
        store=InMemoryStore(),
        workspace=tmp_path,
        permissions=PermissionEngine([parse_rule("web_fetch(domain:127.0.0.1)")]),
    )
    try:
        reply = await agent.call("What is new?", RuntimeContext(session_id="s1", user_id="u"))
    finally:
        await agent.aclose()
    assert reply.get_text_content() == "Faster."
    [result] = [
        b
        for m in model.requests[-1].messages
        if isinstance(m.content, list)
        for b in m.content
        if isinstance(b, ToolResultBlock)
    ]
    assert not result.is_error
    assert "## Version 2.0\n\nThe **widget** now spins twice as fast." in result.output
    assert WebPage.model_validate(result.data).final_url == url
    assert json.loads(json.dumps(result.data))["kind"] == "html"


async def test_a_refusal_reaches_the_model_as_a_tool_error(site: LoopbackSite) -> None:
    from agentscope_teams.message import ToolUseBlock
    from agentscope_teams.tools import Toolkit

    toolkit = Toolkit([web_fetch_tool(config())])
    calls = {
        "metadata": {"url": "http://169.254.169.254/latest/meta-data/", "prompt": "x"},
        "pdf": {"url": site.url("/doc.pdf"), "prompt": "x"},
        "no prompt": {"url": site.url("/page.html")},
    }
    for what, arguments in calls.items():
        result = await toolkit.execute(ToolUseBlock(id=what, name="web_fetch", input=arguments))
        assert result.is_error, what
    assert site.hits["/doc.pdf"] == 1 and site.hits["/page.html"] == 0


async def test_a_deeply_nested_page_is_read_not_failed(site: LoopbackSite) -> None:
    """A page nesting thousands of elements (a generated or hostile page) comes back as its text;
    the converter's recursion does not make web_fetch fail."""
    depth = 5000
    html = b"<html><body><h2>Top</h2>" + b"<div>" * depth + b"deep text" + b"</div>" * depth
    site.routes["/deep.html"] = lambda h, q: h._send(200, html + b"</body></html>", "text/html")
    page = await fetch_page(site.url("/deep.html"), "What is deep?", config())
    assert "## Top" in page.content and "deep text" in page.content


async def test_the_time_cap_covers_the_html_conversion(
    site: LoopbackSite, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page whose conversion does not end (here: blocked until the test releases it) still
    ends the fetch at its timeout, as a tool error the model can read."""
    release = threading.Event()

    def stuck(html: object, base_url: str = "") -> str:
        release.wait(60)
        return "converted"

    monkeypatch.setattr(fetch_module, "html_to_markdown", stuck)
    try:
        with pytest.raises(WebAccessError) as caught:
            await fetch_page(site.url("/page.html"), "x", config(timeout=0.5))
        assert caught.value.reason == "timeout"
        assert not release.is_set()  # it ended while the conversion was still stuck
    finally:
        release.set()
