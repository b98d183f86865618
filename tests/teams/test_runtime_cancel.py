"""Stopping a member call keeps the call's shielded sections whole.

``TeamRuntime`` cancels a member's call when it stops (Ctrl-C, team done or deleted, lease lost).
A save in flight runs in a shielded section (and a file-store write in a worker thread): the
cancellation must reach the call only after it, or the write lands while the call never learns its
version and its last save fails ("could not save session ... version conflict" on Ctrl-C).
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from agentscope_teams.context import RuntimeContext
from agentscope_teams.store import InMemoryStore
from agentscope_teams.teams import TeamRuntime
from agentscope_teams.teams.member.slot import Slot

pytestmark = pytest.mark.anyio


class ShieldedCall:
    """An agent whose call enters a shielded section (a save) and records how it ended."""

    def __init__(self) -> None:
        self.entered = anyio.Event()
        self.shielded_done = False

    async def call(self, message: Any, ctx: RuntimeContext) -> None:
        with anyio.CancelScope(shield=True):
            self.entered.set()
            await anyio.sleep(0.2)
            self.shielded_done = True
        await anyio.sleep_forever()


class LostLease:
    lost = True

    async def renew(self) -> None:
        return None


class Client:
    async def set_member_status(self, *args: Any) -> None:
        return None


def slot_with(agent: ShieldedCall) -> Slot:
    ref: Any = SimpleNamespace(
        ctx=RuntimeContext(session_id="s"), team_id="t", key=("t",), budgets={}
    )
    slot = Slot(ref, "member")
    ext = SimpleNamespace(
        team=None, moved=0, view=SimpleNamespace(client=Client())
    )  # status writes
    slot.agent, slot.ext = agent, ext  # type: ignore[assignment]
    return slot


@pytest.mark.parametrize("how", ["stop", "lost lease"])
async def test_stopping_a_member_lets_its_shielded_save_finish(how: str) -> None:
    runtime = TeamRuntime(InMemoryStore())
    agent = ShieldedCall()
    slot = slot_with(agent)
    no_budget = {"max_tokens": None, "max_budget_usd": None}
    team: Any = SimpleNamespace(id="t", lead="lead", **no_budget)
    member: Any = SimpleNamespace(name="member", session_id="s-member", **no_budget)
    work: Any = SimpleNamespace(
        offers=set(), message=lambda: "work", trace=None, linked=[], unread=[]
    )

    runtime._launch(slot, Client(), team, member, work)  # type: ignore[arg-type]
    with anyio.fail_after(10):
        await agent.entered.wait()
        if how == "stop":
            await runtime._stop(slot)
        else:  # the heartbeat finds the member's lease lost
            slot.lease = LostLease()  # type: ignore[assignment]
            await slot.beat()
            assert slot.call is not None
            await asyncio.wait({slot.call})

    assert agent.shielded_done, "the member's shielded save was cut short"
    assert not slot.busy
