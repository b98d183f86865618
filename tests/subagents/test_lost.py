"""Orphaned runs become ``lost``, the janitor removes their directories, inbox delivery is exactly-once
in the context even when an acknowledgement is lost."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.subagents import RunBook, RunRecord, RunStatus, janitor, run_dir
from agentscope_teams.subagents.inbox import INBOX_META, Notice

from .helpers import (
    ALICE,
    BOB,
    all_text,
    call,
    extension,
    is_dir,
    last_output,
    make_parent,
    runs,
    spawn,
)


@pytest.fixture
def store() -> InMemoryStore:
    return InMemoryStore()


async def orphan(
    store: InMemoryStore,
    root: Path,
    run_id: str,
    *,
    ctx: RuntimeContext = ALICE,
    status: RunStatus = RunStatus.RUNNING,
    label: str | None = None,
) -> Path:
    """A run record as a crashed process leaves it: lease expired, directory still there."""
    book = RunBook.for_ctx(store, ctx)
    lease = book.lease(run_id, 0.05)
    assert await lease.try_acquire()
    workspace = run_dir(root, ctx, "rev", f"l:{label}" if label else f"r:{run_id}")
    workspace.mkdir(parents=True)
    (workspace / "scratch.txt").write_text("x")
    rec = RunRecord(
        run_id=run_id,
        parent_agent="lead",
        spec="rev",
        task="t",
        label=label,
        status=status,
        child_session="sub-rev-x",
        depth=1,
        lease=lease.holder,
        background=True,
        workspace=str(workspace),
    )
    await book.create(rec)
    await anyio.sleep(0.1)  # the lease expires
    return workspace


async def test_expired_lease_is_listed_lost_and_its_workspace_removed(
    tmp_path: Path, store: InMemoryStore
) -> None:
    lead_model = ScriptedModel([call("agent_list"), "noted", "next"])
    lead = make_parent(tmp_path, store, lead_model, {"rev": ScriptedModel([])})
    workspace = await orphan(store, lead.workspace, "r-0123456789")

    await lead.call("status?", ALICE)
    await lead.call("and?", ALICE)

    assert "r-0123456789 agent=rev status=lost" in last_output(lead_model.requests[1])
    assert not workspace.exists() and not workspace.parent.exists()
    [rec] = await runs(store)
    assert rec.status is RunStatus.LOST and rec.notified and rec.ended_at is not None
    lost = [m for m in lead_model.requests[2].messages if INBOX_META in m.metadata]
    assert len(lost) == 1 and "was lost" in lost[0].get_text_content()


async def test_a_waiting_parent_learns_at_its_next_call_that_a_run_was_lost(
    tmp_path: Path, store: InMemoryStore
) -> None:
    lead_model = ScriptedModel(["ok"])
    lead = make_parent(tmp_path, store, lead_model, {"rev": ScriptedModel([])})
    state = await lead.get_agent_state(ALICE)
    state.middle_context["subagents"] = {"watch": ["r-00000000aa"], "delivered": []}
    await lead.sessions.upsert_session(
        user_id="alice", agent_id="lead", state=state, session_id="s1", org_id="acme"
    )
    await orphan(store, lead.workspace, "r-00000000aa")

    await lead.call("hello", ALICE)

    assert "r-00000000aa (rev) was lost" in all_text(lead_model.requests[0])
    saved = await lead.get_agent_state(ALICE)
    assert saved.middle_context["subagents"]["watch"] == []


async def test_janitor_sweeps_every_session_but_keeps_active_and_labelled_dirs(
    tmp_path: Path, store: InMemoryStore
) -> None:
    root = tmp_path / "root"
    gone = await orphan(store, root, "r-aaaaaaaaaa")
    gone_bob = await orphan(store, root, "r-bbbbbbbbbb", ctx=BOB, status=RunStatus.COMPLETED)
    kept = await orphan(store, root, "r-cccccccccc", label="notes")
    book = RunBook.for_ctx(store, ALICE)
    live = book.lease("r-dddddddddd", 30)
    await live.try_acquire()
    active = run_dir(root, ALICE, "rev", "r:r-dddddddddd")
    active.mkdir(parents=True)
    await book.create(
        RunRecord(
            run_id="r-dddddddddd",
            parent_agent="lead",
            spec="rev",
            task="t",
            child_session="c",
            depth=1,
            lease=live.holder,
        )
    )

    removed = await janitor(store, root)

    assert sorted(removed) == sorted([gone, gone_bob])
    assert kept.exists() and active.exists() and not gone.exists()
    assert (await book.get("r-aaaaaaaaaa")) is not None
    assert [r.status for r in await runs(store) if r.run_id == "r-aaaaaaaaaa"] == [RunStatus.LOST]


async def test_lost_acknowledgement_never_duplicates_a_notice(
    tmp_path: Path, store: InMemoryStore
) -> None:
    lead_model = ScriptedModel(["one", "two", "three"])
    lead = make_parent(tmp_path, store, lead_model, {"rev": ScriptedModel([])})
    inbox = RunBook.for_ctx(store, ALICE).inbox("lead")
    notice = Notice(id="r-1:completed", run_id="r-1", text="result of r-1")
    await inbox.post(notice)
    await inbox.post(notice)  # a crashed notifier posted it twice

    await lead.call("a", ALICE)
    assert await inbox.cursor() == 2
    await store.delete(inbox.cursor_key)  # as if the process died before acknowledging
    await lead.call("b", ALICE)
    await lead.call("c", ALICE)

    state = await lead.get_agent_state(ALICE)
    assert sum(m.metadata.get(INBOX_META) == "r-1:completed" for m in state.context) == 1
    assert await inbox.cursor() == 2


async def test_runs_stopped_by_shutdown_are_lost_and_reported(
    tmp_path: Path, store: InMemoryStore
) -> None:
    child = ScriptedModel(lambda req: call("list_files"), delay=0.05)
    lead_model = ScriptedModel([spawn("rev", "forever", timeout_seconds=0), "started", "next"])
    lead = make_parent(tmp_path, store, lead_model, {"rev": child})
    await lead.call("go", ALICE)

    await extension(lead).aclose()
    await lead.call("what happened?", ALICE)

    [rec] = await runs(store)
    assert rec.status is RunStatus.LOST and "shut down" in (rec.error or "")
    assert "was lost" in all_text(lead_model.requests[2])
    assert rec.workspace and not is_dir(rec.workspace)


async def test_the_janitor_keeps_a_run_it_cannot_read_and_sweeps_the_rest(
    tmp_path: Path, store: InMemoryStore
) -> None:
    root = tmp_path / "root"
    unreadable = await orphan(store, root, "r-eeeeeeeeee")
    gone = await orphan(store, root, "r-ffffffffff")
    book = RunBook.for_ctx(store, ALICE)
    await store.put(book.key("r-eeeeeeeeee"), b"{not json")
    await anyio.sleep(0.1)  # both leases expire

    removed = await janitor(store, root)

    assert removed == [gone]  # the sweep went on past the bad record
    assert unreadable.exists()  # it may belong to a live run: kept


async def test_an_undecodable_notice_does_not_block_the_ones_after_it(
    tmp_path: Path, store: InMemoryStore
) -> None:
    inbox = RunBook.for_ctx(store, ALICE).inbox("lead")
    await inbox.post(Notice(id="r-1:completed", run_id="r-1", text="first"))
    await store.append(inbox.stream, b"{garbage")
    await inbox.post(Notice(id="r-2:completed", run_id="r-2", text="third"))

    pending = await inbox.pending(0)

    assert [(seq, n.text) for seq, n in pending] == [(1, "first"), (3, "third")]
