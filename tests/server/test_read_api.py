"""Sessions and subagent runs of the operator's own (org, user), read-only."""

from __future__ import annotations

import anyio
import httpx

from agentscope_teams.context import RuntimeContext
from agentscope_teams.sessions import SessionConfig, SessionStorage
from agentscope_teams.store import BaseStore, store_from_url
from agentscope_teams.subagents.runs import RunBook, RunRecord, RunStatus

from .harness import Served
from .test_api import Api


async def seed(store: BaseStore, org: str) -> None:
    storage = SessionStorage(store)
    for user in ("alice", "bob"):
        await storage.upsert_session(
            user_id=user,
            org_id=org,
            agent_id="reviewer",
            session_id=f"s-{user}",
            config=SessionConfig(model="scripted"),
        )
    ctx = RuntimeContext(session_id="s-alice", user_id="alice", org_id=org)
    book = RunBook.for_ctx(store, ctx)
    for run_id, status in (("r-done", RunStatus.COMPLETED), ("r-orphan", RunStatus.RUNNING)):
        record = RunRecord(
            run_id=run_id,
            parent_agent="reviewer",
            spec="explorer",
            task=f"look around ({run_id})",
            status=status,
            child_session=f"sub-{run_id}",
            depth=1,
            lease="holder",
        )
        await book.create(record)
    lease = book.lease("r-live", 60)
    await book.create(
        RunRecord(
            run_id="r-live",
            parent_agent="reviewer",
            spec="explorer",
            task="still going",
            status=RunStatus.RUNNING,
            child_session="sub-live",
            depth=1,
            lease=lease.holder,
        )
    )
    assert await lease.try_acquire()


def test_sessions_and_runs_of_the_operator_only(served: Served, http: httpx.Client) -> None:
    alice, bob = Api(http, served.tokens["alice"]), Api(http, served.tokens["bob"])
    org = alice.ok("GET", "/api/whoami")["org_id"]

    async def run_seed() -> None:
        async with store_from_url(served.store_url) as store:
            await seed(store, org)

    anyio.run(run_seed)
    sessions = alice.ok("GET", "/api/sessions")
    assert [(s["agent_id"], s["session_id"], s["model"]) for s in sessions] == [
        ("reviewer", "s-alice", "scripted")
    ]
    assert [s["session_id"] for s in bob.ok("GET", "/api/sessions")] == ["s-bob"]
    assert alice.ok("GET", "/api/sessions", params={"agent": "other"}) == []
    record = alice.ok("GET", "/api/sessions/reviewer/s-alice")
    assert record["config"]["model"] == "scripted" and record["user_id"] == "alice"
    assert bob("GET", "/api/sessions/reviewer/s-alice").status_code == 404

    runs = {r["run_id"]: r for r in alice.ok("GET", "/api/subagent-runs")}
    assert set(runs) == {"r-done", "r-orphan", "r-live"}
    assert runs["r-done"]["status"] == "completed"
    assert (runs["r-orphan"]["status"], runs["r-orphan"]["lease_alive"]) == ("running", False)
    assert (runs["r-live"]["status"], runs["r-live"]["lease_alive"]) == ("running", True)
    assert runs["r-live"]["parent_session"] == "s-alice"
    assert bob.ok("GET", "/api/subagent-runs") == []
    # Reading changed nothing: the orphan is still "running" in the store.
    assert {r["run_id"]: r["status"] for r in alice.ok("GET", "/api/subagent-runs")} == {
        "r-done": "completed",
        "r-orphan": "running",
        "r-live": "running",
    }


def test_an_unreadable_run_is_skipped_and_the_others_listed(
    served: Served, http: httpx.Client
) -> None:
    alice = Api(http, served.tokens["alice"])
    org = alice.ok("GET", "/api/whoami")["org_id"]

    async def run_seed() -> None:
        async with store_from_url(served.store_url) as store:
            await seed(store, org)
            book = RunBook.for_ctx(
                store, RuntimeContext(session_id="s-alice", user_id="alice", org_id=org)
            )
            await store.put(book.key("r-done"), b"{not json")

    anyio.run(run_seed)
    runs = {r["run_id"] for r in alice.ok("GET", "/api/subagent-runs")}
    assert runs == {"r-orphan", "r-live"}


def test_team_usage_counts_the_lead_and_members_for_operators_only(
    served: Served, http: httpx.Client
) -> None:
    from agentscope_teams.message import Msg
    from agentscope_teams.state import AgentState
    from agentscope_teams.teams.lead.state import TeamLeadState

    from .test_api import make_team

    alice = Api(http, served.tokens["alice"])
    org = alice.ok("GET", "/api/whoami")["org_id"]
    team_id, tokens = make_team(alice)
    team = alice.ok("GET", f"/api/teams/{team_id}")
    w1_session = next(m["session_id"] for m in team["members"] if m["name"] == "w1")

    async def run_seed() -> None:
        lead = AgentState()
        TeamLeadState.of(lead).team_id = team_id
        lead.usage.input_tokens, lead.usage.requests = 50, 1
        other = AgentState()  # the lead's session of another team: not counted
        TeamLeadState.of(other).team_id = "t-other"
        other.usage.input_tokens = 999
        w1 = AgentState(
            context=[Msg(role="assistant", name="w1", content="x", metadata={"cost_usd": 0.25})]
        )
        w1.usage.output_tokens, w1.usage.requests = 7, 1
        async with store_from_url(served.store_url) as store:
            storage = SessionStorage(store)
            for agent, session, state in (
                (team["lead"], "s-lead", lead),
                (team["lead"], "s-lead-2", other),
                ("w1", w1_session, w1),
            ):
                await storage.upsert_session(
                    user_id="alice", org_id=org, agent_id=agent, session_id=session, state=state
                )

    async def fail_a_run() -> None:
        async with store_from_url(served.store_url) as store:
            ctx = RuntimeContext(session_id=w1_session, user_id="alice", org_id=org)
            record = RunRecord(
                run_id="r-crashed",
                parent_agent="coder",
                spec="explorer",
                task="look",
                status=RunStatus.FAILED,
                error="model error: 500 from the provider",
                child_session="sub-crashed",
                depth=1,
                lease="holder",
            )
            await RunBook.for_ctx(store, ctx).create(record)

    anyio.run(run_seed)
    anyio.run(fail_a_run)
    [error] = alice.ok("GET", f"/api/teams/{team_id}/errors")
    assert (error["kind"], error["who"], error["session_id"]) == ("run_failed", "w1", "sub-crashed")
    assert "500 from the provider" in error["detail"]
    usage = alice.ok("GET", f"/api/teams/{team_id}/usage")
    rows = {p["name"]: p for p in usage["participants"]}
    assert (rows[team["lead"]]["session_id"], rows[team["lead"]]["input_tokens"]) == ("s-lead", 50)
    assert (rows["w1"]["agent_id"], rows["w1"]["cost_usd"]) == ("w1", 0.25)
    assert rows["w2"]["session_id"] is None and rows["w2"]["cost_usd"] is None
    assert usage["total"] == {
        "input_tokens": 50,
        "output_tokens": 7,
        "requests": 2,
        "cost_usd": 0.25,
    }
    member = Api(http, tokens["w1"])
    assert member("GET", f"/api/teams/{team_id}/usage").status_code == 403
    assert member("GET", f"/api/teams/{team_id}/errors").status_code == 403
    bob = Api(http, served.tokens["bob"])
    assert bob("GET", f"/api/teams/{team_id}/errors").status_code == 404


def test_a_session_whose_id_holds_a_slash_is_read_percent_encoded(
    served: Served, http: httpx.Client
) -> None:
    alice = Api(http, served.tokens["alice"])
    org = alice.ok("GET", "/api/whoami")["org_id"]

    async def run_seed() -> None:
        async with store_from_url(served.store_url) as store:
            await SessionStorage(store).upsert_session(
                user_id="alice",
                org_id=org,
                agent_id="reviewer",
                session_id="pr/42",  # `run --session pr/42` makes such an id
                config=SessionConfig(model="scripted"),
            )

    anyio.run(run_seed)
    record = alice.ok("GET", "/api/sessions/reviewer/pr%2F42")
    assert (record["session_id"], record["user_id"]) == ("pr/42", "alice")
