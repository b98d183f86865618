"""The dashboard in a real browser (Debian chromium driven by Playwright): live updates over SSE.

Skipped only when chromium or Playwright is missing and AGENTSCOPE_TEAMS_REQUIRE_SERVICES != "1".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import httpx
import pytest

from agentscope_teams.sessions import SessionConfig, SessionStorage
from agentscope_teams.store import store_from_url

from ..backends import REQUIRE_SERVICES
from .harness import Served
from .test_api import Api, make_team

if TYPE_CHECKING:
    from playwright.sync_api import ConsoleMessage, Error, Locator, Page

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WAIT = 10_000  # ms


def _missing(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(reason + " and AGENTSCOPE_TEAMS_REQUIRE_SERVICES=1 forbids skipping")
    pytest.skip(reason)


@dataclass
class Tab:
    """A chromium page and the errors its console reported."""

    page: Page
    errors: list[str] = field(default_factory=list)

    def console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(message.text)

    def crashed(self, error: Error) -> None:
        self.errors.append(str(error))


@pytest.fixture
def tab(served: Served) -> Iterator[Tab]:
    """A chromium page; it depends on ``served`` so it closes before the server stops."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the playwright package is not installed (pip install playwright)")
    if not CHROMIUM.exists():
        _missing(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        tab = Tab(context.new_page())
        tab.page.set_default_timeout(WAIT)
        tab.page.on("console", tab.console)
        tab.page.on("pageerror", tab.crashed)
        try:
            yield tab
        finally:
            browser.close()


def card(page: Page, status: str, task_id: str) -> Locator:
    return page.locator(f'.column[data-status="{status}"] [data-task-id="{task_id}"]')


def test_dashboard_follows_a_team_live(
    tab: Tab, served: Served, http: httpx.Client, tmp_path: Path
) -> None:
    page = tab.page
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    w1, w2 = Api(http, tokens["w1"]), Api(http, tokens["w2"])
    t = f"/api/teams/{team_id}"
    build = op.ok("POST", t + "/tasks", {"title": "Build the parser"}, 201)
    test = op.ok("POST", t + "/tasks", {"title": "Test it", "blocked_by": [build["id"]]}, 201)
    docs = op.ok("POST", t + "/tasks", {"title": "Write docs", "assignee": "w2"}, 201)
    extra = op.ok("POST", t + "/tasks", {"title": "Nice to have"}, 201)

    page.goto(f"{served.base_url}/?token={served.tokens['alice']}")
    assert "token=" not in page.url
    page.click(f'[data-team-id="{team_id}"]')
    page.wait_for_selector('#live[data-state="live"]')
    page.evaluate("window.__sameDocument = true")
    for task in (build, test, docs, extra):
        card(page, "pending", task["id"]).wait_for()
    assert "waiting for" in card(page, "pending", test["id"]).inner_text()

    w1.ok("POST", t + "/claim", {})
    card(page, "in_progress", build["id"]).wait_for()
    assert "owner w1" in card(page, "in_progress", build["id"]).inner_text()
    w1.ok("POST", f"{t}/tasks/{build['id']}/complete", {"result": "parser built"})
    card(page, "completed", build["id"]).wait_for()
    w2.ok("POST", f"{t}/tasks/{docs['id']}/claim", {})
    w2.ok("POST", f"{t}/tasks/{docs['id']}/fail", {"error": "no time"})
    card(page, "failed", docs["id"]).wait_for()
    op.ok("POST", f"{t}/tasks/{extra['id']}/cancel", {"reason": "later"})
    card(page, "cancelled", extra["id"]).wait_for()
    w2.ok("POST", f"{t}/tasks/{test['id']}/claim", {})
    card(page, "in_progress", test["id"]).wait_for()

    w1.ok("POST", t + "/messages", {"to": "w2", "content": "parser is in, please test"}, 201)
    page.locator(".message", has_text="parser is in, please test").wait_for()
    op.ok("POST", t + "/broadcast", {"content": "standup in 5"}, 201)
    page.locator(".message", has_text="standup in 5").wait_for()
    assert page.locator(".message", has_text="standup in 5").count() == 1
    w1.ok("PUT", f"{t}/members/w1/status", {"status": "running"})
    page.wait_for_selector('.member[data-member="w1"][data-status="running"]')

    completed = card(page, "completed", build["id"])
    completed.locator("summary").click()
    assert "claimed" in completed.locator(".history").inner_text()
    assert page.locator('.column[data-status="completed"] .count').inner_text() == "1"
    shot = tmp_path / "dashboard.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert page.evaluate("window.__sameDocument") is True  # no reload happened
    assert tab.errors == []


def test_dashboard_shows_members_waiting_on_the_lead(
    tab: Tab, served: Served, http: httpx.Client
) -> None:
    """A plan waiting for the lead's approval, a call refused for want of an approver and a
    hook's stop (continue: false, with its reason) are shown on the member's chip, live, as text
    (a tool name with markup stays text)."""
    page = tab.page
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    t = f"/api/teams/{team_id}"
    page.goto(f"{served.base_url}/?token={served.tokens['alice']}")
    page.click(f'[data-team-id="{team_id}"]')
    page.wait_for_selector('#live[data-state="live"]')
    page.wait_for_selector('.member[data-member="w2"]')
    assert page.locator(".member-note").count() == 0

    tool = "<b>deploy</b>"
    Api(http, tokens["w1"]).ok(
        "POST", f"{t}/members/w1/review", {"action": "note_prompt", "tool": tool}
    )
    prompt = page.locator('.member[data-member="w1"] [data-note="prompt"]')
    prompt.wait_for()
    assert prompt.inner_text() == f"{tool} refused: needs approval"
    Api(http, tokens["w2"]).ok(
        "POST", f"{t}/members/w2/review", {"action": "request_plan", "plan": "p"}
    )
    plan = page.locator('.member[data-member="w2"] [data-note="plan"]')
    plan.wait_for()
    assert "waiting for the lead" in plan.inner_text()
    op.ok("POST", f"{t}/members/w2/review", {"action": "answer_plan", "approve": True})
    plan.wait_for(state="detached")
    stop = {"status": "stopped", "stop_reason": "tests are red", "stop_event": "TaskCompleted"}
    Api(http, tokens["w1"]).ok("PUT", f"{t}/members/w1/status", stop)  # a hook stopped it
    stopped = page.locator('.member[data-member="w1"] [data-note="stop"]')
    stopped.wait_for()
    assert stopped.inner_text() == "stopped by a TaskCompleted hook: tests are red"
    assert page.locator("b").count() == 0  # the tool name was inserted as text, not markup
    assert tab.errors == []


def test_dashboard_login_sessions_and_bad_tokens(
    tab: Tab, served: Served, http: httpx.Client, org: str
) -> None:
    page = tab.page

    async def seed() -> None:
        async with store_from_url(served.store_url) as store:
            await SessionStorage(store).upsert_session(
                user_id="alice",
                org_id=org,
                agent_id="reviewer",
                session_id="s-review-1",
                config=SessionConfig(model="scripted"),
            )

    # Playwright's sync API runs an event loop in this thread: seed the store from another one.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(anyio.run, seed).result()
    page.goto(served.base_url + "/")
    page.wait_for_selector("#login-form")
    page.fill("#token-input", "ast_" + "x" * 43)
    page.click("#login-form button")
    page.wait_for_selector("#login-error:not([hidden])")
    page.fill("#token-input", served.tokens["alice"])
    page.click("#login-form button")
    page.wait_for_selector("#shell:not([hidden])")
    assert "alice" in page.inner_text("#identity")
    page.click("#nav-sessions")
    row = page.locator("#sessions-body tr", has_text="s-review-1")
    row.wait_for()
    assert "scripted" in row.inner_text()
    page.click("#nav-runs")
    page.wait_for_selector("#runs-empty:not([hidden])")
    page.click("#logout")
    page.wait_for_selector("#login:not([hidden])")
    assert page.evaluate("sessionStorage.length") == 0


#: Records every event the page's EventSources deliver, and every stream URL they open.
RECORD_EVENTS = """
window.__events = []; window.__streams = [];
const NativeEventSource = window.EventSource;
window.EventSource = class extends NativeEventSource {
  constructor(url, options) { super(url, options); window.__streams.push(String(url)); }
  addEventListener(name, listener, options) {
    super.addEventListener(name, (ev) => { window.__events.push([name, ev.data]); listener(ev); }, options);
  }
};
"""


def test_a_dropped_stream_resumes_without_losing_or_repeating_events(
    tab: Tab, served: Served, http: httpx.Client
) -> None:
    from .proxy import DroppingProxy

    page = tab.page
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    w1 = Api(http, tokens["w1"])
    t = f"/api/teams/{team_id}"
    build = op.ok("POST", t + "/tasks", {"title": "Build the parser"}, 201)
    w1.ok("POST", t + "/messages", {"to": "w2", "content": "before the drop"}, 201)
    proxy = DroppingProxy(served.base_url)
    try:
        page.add_init_script(RECORD_EVENTS)
        page.goto(f"{proxy.url}/?token={served.tokens['alice']}")
        page.click(f'[data-team-id="{team_id}"]')
        page.wait_for_selector('#live[data-state="live"]')
        page.locator(".message", has_text="before the drop").wait_for()

        proxy.drop()  # the connection goes away mid-run; the page cannot reconnect yet
        page.wait_for_selector('#live[data-state="retry"]')
        w1.ok("POST", t + "/claim", {})
        w1.ok("POST", t + "/messages", {"to": "w2", "content": "during the drop"}, 201)
        op.ok("POST", t + "/broadcast", {"content": "still there?"}, 201)
        w1.ok("PUT", f"{t}/members/w1/status", {"status": "running"})
        proxy.restore()

        page.wait_for_selector('#live[data-state="live"]')
        page.locator(".message", has_text="during the drop").wait_for()
        card(page, "in_progress", build["id"]).wait_for()
        page.wait_for_selector('.member[data-member="w1"][data-status="running"]')
        w1.ok("POST", f"{t}/tasks/{build['id']}/complete", {"result": "done"})
        card(page, "completed", build["id"]).wait_for()
        streams: list[str] = page.evaluate("window.__streams")
        events: list[list[str]] = page.evaluate("window.__events")
    finally:
        proxy.close()
    assert proxy.drops >= 1 and len(streams) >= 2
    assert "last_event_id=" not in streams[0] and all("last_event_id=" in s for s in streams[1:])
    names = [name for name, _ in events]
    assert names.count("team") == 1  # the snapshot came once: the reconnect resumed
    messages = [json.loads(data) for name, data in events if name == "message"]
    keys = [(m["recipient"], m["seq"]) for m in messages]
    assert len(keys) == len(set(keys))  # nothing twice
    contents = sorted(m["content"] for m in messages)
    # nothing lost: each message once per inbox it reached (the broadcast reached w1 and w2)
    assert contents == ["before the drop", "during the drop", "still there?", "still there?"]
    statuses = [json.loads(d)["status"] for n, d in events if n == "task"]
    assert statuses == ["pending", "in_progress", "completed"]
    members = [json.loads(d)["member"] for n, d in events if n == "member"]
    assert [m["status"] for m in members if m["name"] == "w1"][-1] == "running"
    assert len(members) == len({m["name"] for m in members}) + 1  # w1's change, sent once
