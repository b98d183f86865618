"""The dashboard's debugging views in real Chromium: the model, tokens and cost of each session,
usage per team member (live), the conversation of a session or member, the errors panel, and the
team list's filter and search. Sessions are written by a real agent (against a local server that
speaks the OpenAI protocol) or seeded in the store as agents write them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx

from agentscope_teams import RuntimeContext
from agentscope_teams.agent.harness import SessionAgent
from agentscope_teams.message import Msg, TextBlock, ToolResultBlock, ToolUseBlock, UserMsg
from agentscope_teams.model import OpenAIChatModel
from agentscope_teams.sessions import SessionStorage
from agentscope_teams.state import AgentState
from agentscope_teams.store import store_from_url
from agentscope_teams.teams import LocalTeamClient, TeamStatus

from ..model.fake_openai import FakeOpenAI, Reply, chunk
from .harness import Served
from .test_api import Api, make_team
from .test_dashboard import Tab, tab  # noqa: F401  (the chromium fixture)

HOSTILE = '<img src=x onerror="window.__pwned=1">'


def in_thread(fn: Callable[[], Awaitable[Any]]) -> Any:
    """Run ``fn`` on its own event loop (Playwright's sync API holds one in this thread)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn).result()


def reply(text: str) -> Reply:
    return Reply(
        sse=[
            chunk({"role": "assistant", "content": text}),
            chunk({}, "stop"),
            chunk(None),
            "[DONE]",
        ]
    )


def state_of(*messages: Msg, usage: tuple[int, int, int] = (0, 0, 0), **kw: Any) -> AgentState:
    state = AgentState(context=list(messages), **kw)
    state.usage.input_tokens, state.usage.output_tokens, state.usage.requests = usage
    return state


async def seed(served: Served, org: str, agent: str, session: str, state: AgentState) -> None:
    async with store_from_url(served.store_url) as store:
        await SessionStorage(store).upsert_session(
            user_id="alice", org_id=org, agent_id=agent, session_id=session, state=state
        )


def test_sessions_show_model_tokens_and_cost_and_open_a_conversation(
    tab: Tab,  # noqa: F811
    served: Served,
    http: httpx.Client,
    org: str,
) -> None:
    page = tab.page

    async def run_agent() -> None:
        with FakeOpenAI() as fake:
            fake.add(reply("All good, ship it."))
            model = OpenAIChatModel("gpt-4o-mini", api_key="sk-test-0123456789", base_url=fake.url)
            ctx = RuntimeContext(session_id="s-openai", user_id="alice", org_id=org)
            async with (
                store_from_url(served.store_url) as store,
                SessionAgent("reviewer", model, store=store, builtin_tools=False) as agent,
            ):
                await agent.call(UserMsg("review the parser"), ctx)
        priced = Msg(role="assistant", name="pricer", content="done", metadata={"cost_usd": 0.0123})
        await seed(served, org, "pricer", "s-priced", state_of(priced, usage=(300, 40, 1)))

    in_thread(run_agent)
    listed = {
        s["session_id"]: s for s in Api(http, served.tokens["alice"]).ok("GET", "/api/sessions")
    }
    assert listed["s-openai"]["model"] == "gpt-4o-mini"  # recorded by the agent that made it
    assert (listed["s-openai"]["input_tokens"], listed["s-openai"]["output_tokens"]) == (11, 7)

    page.goto(f"{served.base_url}/?token={served.tokens['alice']}#sessions")
    row = page.locator('#sessions-body tr[data-session="s-openai"]')
    row.wait_for()
    assert row.locator(".model").inner_text() == "gpt-4o-mini"
    assert row.locator(".tokens").inner_text() == "11 in · 7 out"
    # priced from the tokens the provider reported (11 in, 7 out of gpt-4o-mini): too small to
    # show in 4 decimals, and not "$0.0000"
    assert row.locator(".cost").inner_text() == "<$0.0001"
    assert 0 < listed["s-openai"]["cost_usd"] < 0.0001
    priced_row = page.locator('#sessions-body tr[data-session="s-priced"]')
    assert priced_row.locator(".cost").inner_text() == "$0.0123"

    row.click()
    page.wait_for_selector("#view-session:not([hidden])")
    page.locator(".turn", has_text="review the parser").wait_for()
    answer = page.locator('.turn[data-role="assistant"]')
    assert "All good, ship it." in answer.inner_text()
    assert "11 in · 7 out tokens" in answer.inner_text()
    assert page.inner_text("#session-model") == "gpt-4o-mini"
    assert tab.errors == []


def _member_sessions(op: Api, team_id: str) -> dict[str, str]:
    team = op.ok("GET", f"/api/teams/{team_id}")
    return {m["name"]: m["session_id"] for m in team["members"]}


def _w1_state(input_tokens: int) -> AgentState:
    return state_of(
        UserMsg("build the parser"),
        Msg(
            role="assistant",
            name="w1",
            content=[ToolUseBlock(id="c1", name="Bash", input={"command": "curl example.com"})],
            metadata={"cost_usd": 0.5},
        ),
        Msg(
            role="user",
            name="tool",
            content=[
                ToolResultBlock(
                    tool_use_id="c1", name="Bash", output="denied by the sandbox", is_error=True
                )
            ],
        ),
        Msg(
            role="assistant",
            name="w1",
            content=[
                TextBlock(text="reading it instead"),
                ToolUseBlock(id="c2", name="Read", input={"file_path": "parser.py"}),
            ],
        ),
        usage=(input_tokens, 20, 2),
    )


def test_team_usage_errors_and_member_conversations_live(
    tab: Tab,  # noqa: F811
    served: Served,
    http: httpx.Client,
    org: str,
) -> None:
    page = tab.page
    op = Api(http, served.tokens["alice"])
    team_id, tokens = make_team(op)
    sessions = _member_sessions(op, team_id)
    t = f"/api/teams/{team_id}"
    task = op.ok("POST", t + "/tasks", {"title": "Deploy"}, 201)
    w2 = Api(http, tokens["w2"])
    w2.ok("POST", f"{t}/tasks/{task['id']}/claim", {})
    w2.ok("POST", f"{t}/tasks/{task['id']}/fail", {"error": "no credentials"})
    paused = state_of(
        Msg(
            role="assistant",
            name="w2",
            content=[ToolUseBlock(id="c9", name=HOSTILE, input={"file_path": "x"})],
        ),
        usage=(5, 1, 1),
        awaiting_confirmation=["c9"],
    )

    async def seed_both() -> None:
        await seed(served, org, "w1", sessions["w1"], _w1_state(100))
        await seed(served, org, "w2", sessions["w2"], paused)

    in_thread(seed_both)
    page.goto(f"{served.base_url}/?token={served.tokens['alice']}")
    page.click(f'[data-team-id="{team_id}"]')
    w1_row = page.locator('#usage-body tr[data-usage="w1"]')
    w1_row.wait_for()
    assert w1_row.inner_text().split("\t") == ["w1 member", "—", "2", "100", "20", "$0.5000"]
    total = page.locator('#usage-total tr[data-usage="total"]')
    assert total.inner_text().split("\t") == ["Team total", "", "3", "105", "21", "$0.5000"]
    assert page.locator('#usage-body tr[data-usage="w2"] td').last.inner_text() == "—"

    errors = page.locator("#errors li")
    assert page.locator('#errors li[data-kind="task_failed"]').inner_text().count("no credentials")
    assert "denied by the sandbox" in page.inner_text('#errors li[data-kind="tool_error"]')
    assert errors.count() == 2

    in_thread(lambda: seed(served, org, "w1", sessions["w1"], _w1_state(4000)))  # live
    page.locator('#usage-body tr[data-usage="w1"]', has_text="4,000").wait_for()
    assert "4,020 tok · $0.5000" in page.inner_text('.member[data-member="w1"]')

    page.click('.member[data-member="w1"]')
    page.wait_for_selector("#view-session:not([hidden])")
    running = page.locator("[data-running]")
    running.wait_for()
    assert running.inner_text().startswith("Running now: Read")
    assert "denied by the sandbox" in page.inner_text('[data-tool-result="c1"]')
    page.click("#session-back")  # back to the team
    page.click('.member[data-member="w2"][data-session]')  # a chip opens once its session is known
    pause = page.locator('[data-pause="c9"]')
    pause.wait_for()
    assert pause.inner_text().startswith(f"Waiting for approval: {HOSTILE}")
    assert page.locator("img").count() == 0 and page.evaluate("window.__pwned") is None
    assert tab.errors == []


def test_team_list_filters_ended_teams_searches_and_shows_every_completed_task(
    tab: Tab,  # noqa: F811
    served: Served,
    http: httpx.Client,
    org: str,
) -> None:
    page = tab.page
    op = Api(http, served.tokens["alice"])
    live = op.ok("POST", "/api/teams", {"name": "parser crew"}, 201)["team"]["id"]
    ended = op.ok("POST", "/api/teams", {"name": HOSTILE}, 201)["team"]["id"]
    worker = op.ok("POST", f"/api/teams/{live}/members", {"name": "w", "spec": "coder"}, 201)
    w = Api(http, worker["token"])
    for i in range(14):
        task = op.ok("POST", f"/api/teams/{live}/tasks", {"title": f"step {i}"}, 201)
        w.ok("POST", f"/api/teams/{live}/tasks/{task['id']}/claim", {})
        w.ok("POST", f"/api/teams/{live}/tasks/{task['id']}/complete", {"result": "ok"})

    async def finish() -> None:
        async with store_from_url(served.store_url) as store:
            ctx = RuntimeContext(session_id="s", user_id="alice", org_id=org)
            await LocalTeamClient(store, ctx).set_team_status(ended, TeamStatus.DONE)

    in_thread(finish)
    page.goto(f"{served.base_url}/?token={served.tokens['alice']}")
    page.locator(f'[data-team-id="{live}"]').wait_for()
    assert page.locator(f'[data-team-id="{ended}"]').count() == 0  # ended: not in the default view
    assert "created " in page.inner_text(f'[data-team-id="{live}"]')
    page.select_option("#team-filter", "ended")
    page.locator(f'[data-team-id="{ended}"]').wait_for()
    assert page.locator(f'[data-team-id="{ended}"] .team-title').inner_text() == HOSTILE
    assert page.locator(f'[data-team-id="{live}"]').count() == 0
    page.select_option("#team-filter", "all")
    page.fill("#team-search", "PARSER")
    page.locator(f'[data-team-id="{ended}"]').wait_for(state="detached")
    page.fill("#team-search", "nothing like it")
    page.wait_for_selector("#no-match:not([hidden])")
    page.fill("#team-search", "")

    page.click(f'[data-team-id="{live}"]')
    column = page.locator('.column[data-status="completed"]')
    column.locator(".card").nth(13).wait_for()
    cards = column.locator(".cards")
    assert cards.evaluate("el => el.scrollHeight <= el.clientHeight")  # nothing hidden inside it
    last = column.locator(".card").nth(13)
    last.scroll_into_view_if_needed()
    assert last.is_visible() and "step 13" in last.inner_text()
    bars = page.locator('#work-timeline .work-row[data-who="w"] .work-bar.o-completed')
    assert bars.count() == 14 and "step 0" in bars.first.inner_text()  # who worked on what, when
    assert page.locator("img").count() == 0
    assert tab.errors == []
