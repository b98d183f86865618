"""``ControlPlaneTeamClient``: the TeamClient protocol over HTTP, with the local client's errors."""

from __future__ import annotations

import socket

import pytest

from agentscope_teams import RuntimeContext
from agentscope_teams.errors import (
    ClaimConflict,
    NotTaskOwnerError,
    TaskStateError,
    TeamError,
    UnknownMemberError,
)
from agentscope_teams.keys import TeamKeys
from agentscope_teams.server import ControlPlaneAuthError, ControlPlaneError, ControlPlaneTeamClient
from agentscope_teams.store import store_from_url
from agentscope_teams.teams import (
    Member,
    MemberStatus,
    TaskStatus,
    TeamClient,
    TeamStatus,
    UnknownTaskError,
    UnknownTeamError,
)

from .harness import Served


async def test_the_protocol_over_http(served: Served) -> None:
    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        assert isinstance(op, TeamClient)
        team = await op.create_team(
            "crew", members=[Member(name="w1", spec="coder")], description="ship the release"
        )
        assert (await op.get_team(team.id)).description == "ship the release"
        await op.spawn_member(team.id, "w2", "tester", permission_mode="plan", plan_approval=True)
        assert [t.id for t in await op.list_teams()] == [team.id]
        w2_record = (await op.get_team(team.id)).member("w2")
        assert w2_record is not None and w2_record.permission_mode == "plan"
        assert w2_record.plan_approval
        assert {m.name for m in (await op.get_team(team.id)).members} == {"w1", "w2"}
        a = await op.assign_task(team.id, "a")
        b = await op.assign_task(team.id, "b", "after a", blocked_by=[a.id], assignee="w2")
        tokens = {name: op.member_tokens[(team.id, name)] for name in ("w1", "w2")}

    async with (
        ControlPlaneTeamClient(served.base_url, tokens["w1"]) as w1,
        ControlPlaneTeamClient(served.base_url, tokens["w2"]) as w2,
    ):
        claimed = await w1.claim_task(team.id, "w1")
        assert claimed is not None and claimed.id == a.id
        assert (await w1.renew_task_lease(team.id, "w1", a.id, task_lease=90)).lease_seconds == 90
        await w1.complete_task(team.id, "w1", a.id, "done")
        assert (await w2.get_task(team.id, b.id)).blocked_reason is None
        assert (await w2.claim_task(team.id, "w2", b.id)) is not None
        assert (await w2.release_task(team.id, "w2", b.id)).status is TaskStatus.PENDING
        await w2.claim_task(team.id, "w2")
        assert (await w2.fail_task(team.id, "w2", b.id, "boom")).error == "boom"
        assert [t.id for t in await w1.list_tasks(team.id, TaskStatus.FAILED)] == [b.id]
        assert await w1.reap_expired(team.id) == []
        assert await w1.wait_for_tasks(team.id, timeout=1)
        assert (await w1.set_member_status(team.id, "w1", MemberStatus.IDLE)).status == "idle"

        sent = await w1.send_message(team.id, "w1", "w2", "hi")
        assert (sent.sender, sent.seq) == ("w1", 1)
        assert len(await w2.broadcast_message(team.id, "w2", "all")) == 2
        assert [m.content for m in await w2.read_messages(team.id, "w2")] == ["hi"]
        assert await w2.acknowledge(team.id, "w2", 1) == 1
        assert await w2.unread(team.id, "w2") == []
        assert [m.content for m in await w1.unread(team.id, "w1")] == ["all"]

        stopped = await w2.stop_member(team.id, "w2", "tests are red", event="TeammateIdle")
        assert stopped.stop is not None and stopped.stop.reason == "tests are red"
        with pytest.raises(TeamError, match="stopped by a TeammateIdle hook"):
            await w2.set_member_status(team.id, "w2", MemberStatus.IDLE)

    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        c = await op.assign_task(team.id, "c")
        assert (await op.cancel_task(team.id, c.id, reason="no")).status is TaskStatus.CANCELLED
        assert (await op.set_team_status(team.id, TeamStatus.DONE)).status is TeamStatus.DONE
        await op.delete_team(team.id)
        assert await op.list_teams() == []


async def test_own_task_first_and_the_open_board_over_http(served: Served) -> None:
    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        team = await op.create_team("crew", members=[Member(name="w1")])
        a = await op.assign_task(team.id, "a")
        b = await op.assign_task(team.id, "b")
        c = await op.assign_task(team.id, "c", blocked_by=[a.id])
        token = op.member_tokens[(team.id, "w1")]

    async with ControlPlaneTeamClient(served.base_url, token) as w1:
        await w1.claim_task(team.id, "w1", b.id)
        own = await w1.claim_task(team.id, "w1", prefer_own=True)
        assert own is not None and (own.id, own.attempts) == (b.id, 1)
        new = await w1.claim_task(team.id, "w1")
        assert new is not None and new.id == a.id
        await w1.complete_task(team.id, "w1", a.id)
        board = await w1.open_board(team.id)
        assert [(t.id, t.status) for t in board] == [
            (b.id, TaskStatus.IN_PROGRESS),
            (c.id, TaskStatus.PENDING),
            (a.id, TaskStatus.COMPLETED),  # the finished task c waited on
        ]
        assert board[1].blocked_reason is None


async def test_errors_map_to_the_local_classes(served: Served) -> None:
    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        team = await op.create_team("crew", members=[Member(name="w1"), Member(name="w2")])
        task = await op.assign_task(team.id, "x")
        w1_token = op.member_tokens[(team.id, "w1")]
        await op.claim_task(team.id, "w1", task.id)
        with pytest.raises(ClaimConflict) as conflict:
            await op.claim_task(team.id, "w2", task.id)
        assert (conflict.value.task_id, conflict.value.owner) == (task.id, "w1")
        with pytest.raises(NotTaskOwnerError):
            await op.complete_task(team.id, "w2", task.id)
        other = await op.assign_task(team.id, "y")
        with pytest.raises(TaskStateError):
            await op.complete_task(team.id, "w1", other.id)
        with pytest.raises(UnknownTeamError):
            await op.get_team("team-missing")
        with pytest.raises(UnknownTaskError):
            await op.get_task(team.id, "t-404")
        with pytest.raises(UnknownMemberError):
            await op.send_message(team.id, "lead", "ghost", "hi")
        with pytest.raises(TeamError):
            await op.spawn_member(team.id, "w1", "different")
        with pytest.raises(ValueError):
            await op.create_team("bad", lead=" x")

    async with ControlPlaneTeamClient(served.base_url, w1_token) as w1:
        with pytest.raises(ControlPlaneAuthError) as denied:
            await w1.claim_task(team.id, "w2")
        assert denied.value.status == 403
        with pytest.raises(ControlPlaneAuthError):
            await w1.create_team("mine")
    async with ControlPlaneTeamClient(served.base_url, "ast_" + "A" * 43) as forged:
        with pytest.raises(ControlPlaneAuthError) as unknown:
            await forged.list_teams()
        assert unknown.value.status == 401


async def test_unreachable_server_is_a_clear_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    async with ControlPlaneTeamClient(f"http://127.0.0.1:{port}", "ast_x") as client:
        with pytest.raises(ControlPlaneError, match="cannot reach the control plane"):
            await client.list_teams()


async def test_task_result_schema_and_data_over_http(served: Served) -> None:
    from agentscope_teams import OutputValidationError

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        team = await op.create_team("crew", members=[Member(name="w1")])
        task = await op.assign_task(team.id, "count", result_schema=schema)
        assert task.result_schema == schema
        token = op.member_tokens[(team.id, "w1")]
    async with ControlPlaneTeamClient(served.base_url, token) as w1:
        await w1.claim_task(team.id, "w1", task.id)
        with pytest.raises(OutputValidationError) as caught:  # 422, rebuilt from its type
            await w1.complete_task(team.id, "w1", task.id, "r", data={"n": "many"})
        assert caught.value.problems == ["n: 'many' is not of type 'integer'"]
        assert (await w1.get_task(team.id, task.id)).status is TaskStatus.IN_PROGRESS
        done = await w1.complete_task(team.id, "w1", task.id, "r", data={"n": 4})
        assert done.status is TaskStatus.COMPLETED and done.result_data == {"n": 4}


async def test_a_remote_member_reads_past_a_page_of_unreadable_messages(
    served: Served, org: str
) -> None:
    """Over HTTP the listing's problems are not sent: the notice standing for the unreadable
    messages is, so a remote member's cursor moves past them."""
    async with ControlPlaneTeamClient(served.base_url, served.tokens["alice"]) as op:
        team = await op.create_team("crew", members=[Member(name="w1", spec="coder")])
        token = op.member_tokens[(team.id, "w1")]
    scope = RuntimeContext(session_id="s", user_id="alice", org_id=org).owner_scope()
    async with store_from_url(served.store_url) as store:
        for _ in range(100):
            await store.append(TeamKeys(scope, team.id).inbox("w1"), b"\x00not json")
    async with ControlPlaneTeamClient(served.base_url, token) as w1:
        (notice,) = await w1.unread(team.id, "w1")
        assert notice.sender == "" and notice.seq == 100
        assert "100 messages in your team inbox (seq 1 to seq 100)" in notice.content
        assert await w1.acknowledge(team.id, "w1", notice.seq) == 100
        assert await w1.unread(team.id, "w1") == []
