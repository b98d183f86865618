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
