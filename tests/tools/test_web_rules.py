"""``web_fetch(domain:…)`` permission rules (Claude Code's ``WebFetch(domain:…)``): a domain covers
the host and its subdomains, lookalikes and parser tricks do not match an allow rule, a remembered
confirmation stores the domain, and plan mode lets the read-only web tools run."""

from __future__ import annotations

import pytest

from agentscope_teams.state import PermissionContext
from agentscope_teams.tools import PermissionEngine, parse_rule, remember_rule
from agentscope_teams.tools.web import WebConfig, web_fetch_tool

FETCH = web_fetch_tool(WebConfig())


def decide(rules: list[str], url: str, behavior: str = "allow", mode: str = "default") -> str:
    engine = PermissionEngine([parse_rule(r, behavior) for r in rules], mode=mode)  # type: ignore[arg-type]
    return engine.decide(FETCH, {"url": url, "prompt": "x"})


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com/",
        "http://example.com/a?b=c",
        "https://docs.example.com/x",
        "https://EXAMPLE.com./x",
        "https://a.b.example.com:8443/",
    ],
)
def test_a_domain_rule_allows_the_host_and_its_subdomains(url: str) -> None:
    assert decide(["web_fetch(domain:example.com)"], url) == "allow"


@pytest.mark.parametrize(
    "url",
    [
        "https://notexample.com/",
        "https://example.com.evil.test/",
        "https://evil.test/?u=example.com",
        "https://evil.test/example.com",
        "https://example.com\\@evil.test/",
        "https://example.com@evil.test/",
        "ftp://example.com/",
        "not a url",
    ],
)
def test_lookalikes_and_tricks_fall_back_to_asking(url: str) -> None:
    assert decide(["web_fetch(domain:example.com)"], url) == "ask"


def test_without_rules_a_fetch_asks_in_default_mode() -> None:
    """Control: the allows above come from the rule, not from the tool's default."""
    assert decide([], "https://example.com/") == "ask"


@pytest.mark.parametrize(
    "url", ["https://evil.test/", "https://cdn.evil.test:444/p", "http://EVIL.TEST./"]
)
def test_a_domain_deny_rule_wins_over_bypass_mode(url: str) -> None:
    assert decide(["web_fetch(domain:evil.test)"], url, "deny", mode="bypass") == "deny"
    assert (
        decide(["web_fetch(domain:evil.test)"], "https://good.test/", "deny", mode="bypass")
        == "allow"
    )


def test_wildcard_domains() -> None:
    assert decide(["web_fetch(domain:*)"], "https://anything.test/") == "allow"
    assert decide(["web_fetch(domain:*.example.com)"], "https://docs.example.com/") == "allow"
    assert decide(["web_fetch(domain:*.example.com)"], "https://example.com/") == "ask"


def test_a_remembered_fetch_allows_its_domain() -> None:
    rule = remember_rule(FETCH, {"url": "https://docs.python.org/3/library/", "prompt": "x"})
    assert (rule.tool, rule.pattern) == ("web_fetch", "domain:docs.python.org")
    engine = PermissionEngine()
    context = PermissionContext(rules=[rule])
    other_page = {"url": "https://docs.python.org/3/tutorial/", "prompt": "y"}
    assert engine.decide(FETCH, other_page, context) == "allow"
    assert engine.decide(FETCH, {"url": "https://pypi.org/", "prompt": "y"}, context) == "ask"


def test_plan_mode_lets_the_read_only_web_fetch_ask_or_follow_its_rules() -> None:
    # read-only, so plan mode does not refuse it; it still asks, as in default mode, unless a rule
    # decides (Claude Code's plan mode keeps permission prompts)
    assert decide([], "https://example.com/", mode="plan") == "ask"
    assert decide(["web_fetch(domain:example.com)"], "https://example.com/", mode="plan") == "allow"
