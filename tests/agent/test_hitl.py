"""Human in the loop: pause, confirm (also from another process), reject, remember, interrupt."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from agentscope_teams.agent import hitl as hitl_mod
from agentscope_teams.errors import HITLError
from agentscope_teams.events import (
    ConfirmResult,
    RequireUserConfirmEvent,
    UserConfirmResultEvent,
    UserInterruptEvent,
)
from agentscope_teams.model import ScriptedModel
from agentscope_teams.state import AgentState, PermissionRule
from agentscope_teams.store import InMemoryStore
from agentscope_teams.tools import PermissionEngine

from . import helpers
from .conftest import SetupFactory
from .helpers import Setup, StoreArgs, orphans, read_log, results_of

GUARDED = 'use guarded {"text": "hello"}'


def effects(setup: Setup) -> list[str]:
    assert setup.log is not None
    return [e["label"] for e in read_log(setup.log) if e["event"] == "effect"]


class Session:
    """One HarnessAgent over an in-memory store, plus the model it uses."""

    def __init__(self, setup: Setup, engine: PermissionEngine | None = None) -> None:
        self.setup = setup
        self.model = ScriptedModel(helpers.brain)
        self.store = InMemoryStore()
        self.agent = helpers.build_agent(setup, self.store, self.model)
        if engine is not None:
            self.agent.loop.permissions = engine

    async def stream(self, input: Any) -> list[Any]:
        return [e async for e in self.agent.stream(input, self.setup.ctx)]

    async def state(self) -> AgentState:
        return await self.agent.get_agent_state(self.setup.ctx)

    async def version(self) -> int:
        record = await self.agent.sessions.get_at(self.agent.address(self.setup.ctx))
        return 0 if record is None else record.version

    async def pause(self, text: str = GUARDED) -> RequireUserConfirmEvent:
        events = await self.stream(text)
        asks = [e for e in events if isinstance(e, RequireUserConfirmEvent)]
        assert len(asks) == 1 and events[-1].type == "reply_end"
        return asks[0]


def confirm(ask: RequireUserConfirmEvent, **answer: Any) -> UserConfirmResultEvent:
    results = [
        ConfirmResult(tool_call_id=c.id, **{"confirmed": True, **answer}) for c in ask.tool_calls
    ]
    return UserConfirmResultEvent(reply_id=ask.reply_id, results=results)


@pytest.fixture
def session(make_setup: SetupFactory) -> Session:
    return Session(make_setup(StoreArgs("memory://")))


# -- across processes ---------------------------------------------------------------------------


async def test_pause_in_one_process_confirm_in_another_runs_the_tool_once(
    shared_args: StoreArgs, make_setup: SetupFactory
) -> None:
    setup = make_setup(shared_args)
    paused = await anyio.to_thread.run_sync(helpers.run_fresh, helpers.child_call, setup, GUARDED)
    assert paused["confirm"] is not None and paused["events"][-1] == "reply_end"
    ask = RequireUserConfirmEvent.model_validate(paused["confirm"])
    call = ask.tool_calls[0]
    assert (call.name, call.input) == ("guarded", {"text": "hello"})

    state = await helpers.saved_state(setup)
    assert state is not None and state.awaiting_confirmation == [call.id]
    assert [c.id for c in state.awaiting_tool_calls()] == [call.id] and effects(setup) == []

    await _rejected_confirmations_change_nothing(setup, ask)

    done = await anyio.to_thread.run_sync(
        helpers.run_fresh, helpers.child_confirm, setup, ask.reply_id, call.id
    )
    assert done["text"] == "done: wrote hello" and effects(setup) == ["hello"]
    seen = helpers.requests_of(done)[-1].messages
    assert results_of(seen)[call.id].output == "wrote hello" and orphans(seen) == ([], [])

    async with setup.store.open() as store:
        agent = helpers.build_agent(setup, store, ScriptedModel([]))
        with pytest.raises(HITLError, match="no reply is waiting"):
            await agent.call(confirm(ask), setup.ctx)  # a second confirmation runs nothing
    assert effects(setup) == ["hello"]


async def _rejected_confirmations_change_nothing(
    setup: Setup, ask: RequireUserConfirmEvent
) -> None:
    call = ask.tool_calls[0]
    bad = [
        UserConfirmResultEvent(
            reply_id="not-the-reply", results=[ConfirmResult(tool_call_id=call.id, confirmed=True)]
        ),
        confirm(ask, input={"text": "something else"}),
        confirm(ask, name="slow"),
        UserConfirmResultEvent(reply_id=ask.reply_id, results=[]),
        UserConfirmResultEvent(
            reply_id=ask.reply_id, results=[ConfirmResult(tool_call_id="unknown", confirmed=True)]
        ),
    ]
    async with setup.store.open() as store:
        agent = helpers.build_agent(setup, store, ScriptedModel([]))
        before = await agent.sessions.get_at(agent.address(setup.ctx))
        assert before is not None
        for event in bad:
            with pytest.raises(HITLError):
                await agent.call(event, setup.ctx)
        after = await agent.sessions.get_at(agent.address(setup.ctx))
    assert after is not None and after.version == before.version
    assert after.state == before.state and effects(setup) == []


# -- in one process -----------------------------------------------------------------------------


async def test_a_confirmation_repeating_the_same_name_and_input_is_accepted(
    session: Session,
) -> None:
    ask = await session.pause()
    call = ask.tool_calls[0]
    final = await session.agent.call(
        confirm(ask, name=call.name, input=dict(call.input)), session.setup.ctx
    )
    assert final.get_text_content() == "done: wrote hello" and effects(session.setup) == ["hello"]


async def test_an_ask_rule_pauses_a_tool_that_needs_no_confirmation(
    make_setup: SetupFactory,
) -> None:
    engine = PermissionEngine([PermissionRule(tool="whoami", behavior="ask")])
    s = Session(make_setup(StoreArgs("memory://")), engine)
    ask = await s.pause("use whoami {}")
    assert [c.name for c in ask.tool_calls] == ["whoami"]
    final = await s.agent.call(confirm(ask), s.setup.ctx)
    assert final.get_text_content() == f"done: {s.setup.session_id}"


async def test_a_deny_rule_wins_over_an_allow_rule(make_setup: SetupFactory) -> None:
    engine = PermissionEngine(
        [
            PermissionRule(tool="guarded", behavior="allow"),
            PermissionRule(tool="guarded", behavior="deny", pattern="hel*"),
        ]
    )
    s = Session(make_setup(StoreArgs("memory://")), engine)
    events = await s.stream(GUARDED)
    assert not any(isinstance(e, RequireUserConfirmEvent) for e in events)
    result = s.model.requests[-1].messages[-1].tool_results()[0]
    assert result.is_error and "denied by rule deny guarded(hel*)" in result.output
    assert effects(s.setup) == []
    await s.stream('use guarded {"text": "other"}')  # the allow rule covers what deny does not
    assert effects(s.setup) == ["other"]


async def test_a_rejected_call_is_an_error_result_and_does_not_run(session: Session) -> None:
    ask = await session.pause()
    final = await session.agent.call(confirm(ask, confirmed=False), session.setup.ctx)
    result = results_of(session.model.requests[-1].messages)[ask.tool_calls[0].id]
    assert result.is_error and result.output == hitl_mod.REJECTED
    assert final.get_text_content() == f"done: {hitl_mod.REJECTED}" and effects(session.setup) == []


async def test_remember_stores_a_rule_used_by_the_next_call(session: Session) -> None:
    ask = await session.pause()
    await session.agent.call(confirm(ask, remember=True), session.setup.ctx)
    rules = (await session.state()).permission_context.rules
    assert [(r.tool, r.behavior) for r in rules] == [("guarded", "allow")]

    events = await session.stream(GUARDED)  # same call: no pause
    assert not any(isinstance(e, RequireUserConfirmEvent) for e in events)
    assert effects(session.setup) == ["hello", "hello"]

    await session.pause('use guarded {"text": "different"}')  # the rule is for that input only
    await session.agent.clear_context(session.setup.ctx)
    state = await session.state()
    assert state.context == [] and state.permission_context.rules == rules


async def test_user_interrupt_resolves_pending_calls(session: Session) -> None:
    ask = await session.pause()
    version = await session.version()
    with pytest.raises(HITLError, match="does not match the paused reply"):
        await session.agent.call(UserInterruptEvent(reply_id="wrong"), session.setup.ctx)
    assert await session.version() == version

    note = await session.agent.call(UserInterruptEvent(reply_id=ask.reply_id), session.setup.ctx)
    assert note.metadata["interrupted"] is True
    state = await session.state()
    assert state.awaiting_confirmation == [] and not state.has_awaiting_tool_calls()
    assert results_of(state.context)[ask.tool_calls[0].id].output == hitl_mod.INTERRUPTED_BY_USER

    again = await session.agent.call(UserInterruptEvent(reply_id="anything"), session.setup.ctx)
    assert "0 pending" in again.get_text_content()  # nothing pending: a no-op
    final = await session.agent.call("hi", session.setup.ctx)
    assert final.get_text_content() == "echo: hi" and effects(session.setup) == []
    assert orphans(session.model.requests[-1].messages) == ([], [])


async def test_a_new_message_to_a_paused_session_interrupts_and_proceeds(session: Session) -> None:
    ask = await session.pause()
    final = await session.agent.call("never mind, just say hi", session.setup.ctx)
    assert final.get_text_content() == "echo: never mind, just say hi"
    seen = session.model.requests[-1].messages
    assert orphans(seen) == ([], [])
    assert results_of(seen)[ask.tool_calls[0].id].output == hitl_mod.NEW_MESSAGE_INTERRUPT
    state = await session.state()
    assert state.awaiting_confirmation == [] and effects(session.setup) == []
    with pytest.raises(HITLError):
        await session.agent.call(confirm(ask), session.setup.ctx)  # too late to confirm


async def test_allowed_calls_of_a_paused_step_run_and_the_asked_one_waits(session: Session) -> None:
    step = ScriptedModel.tool_calls(
        [("whoami", {}), ("guarded", {"text": "a"}), ("slow", {"label": "s", "seconds": 0})]
    )
    session.agent.loop.model = session.model = ScriptedModel([step, "finished"])
    ask = await session.pause("go")
    assert [c.name for c in ask.tool_calls] == ["guarded"]
    state = await session.state()
    done = results_of(state.context)
    assert sorted(r.name for r in done.values()) == ["slow", "whoami"]
    assert [c.id for c in state.awaiting_tool_calls()] == [ask.tool_calls[0].id]

    await session.agent.call(confirm(ask), session.setup.ctx)
    seen = session.model.requests[-1].messages
    assert orphans(seen) == ([], []) and effects(session.setup) == ["a"]
    calls = [c.id for c in step.tool_calls]
    assert [r.tool_use_id for m in seen for r in m.tool_results()] == [calls[0], calls[2], calls[1]]


# -- answers that contradict themselves ----------------------------------------------------------


def answer(ask: RequireUserConfirmEvent, *decisions: tuple[int, bool]) -> UserConfirmResultEvent:
    """An answer with one ConfirmResult per (index of the paused call, confirmed) pair."""
    results = [ConfirmResult(tool_call_id=ask.tool_calls[i].id, confirmed=c) for i, c in decisions]
    return UserConfirmResultEvent(reply_id=ask.reply_id, results=results)


async def test_two_decisions_for_one_call_are_refused_and_the_pause_is_kept(
    session: Session,
) -> None:
    ask = await session.pause()
    call = ask.tool_calls[0]
    before = await session.state()
    version = await session.version()
    for contradictory in ([(0, False), (0, True)], [(0, True), (0, False)], [(0, True), (0, True)]):
        with pytest.raises(HITLError, match=f"{call.id}.*more than once") as raised:
            await session.agent.call(answer(ask, *contradictory), session.setup.ctx)
        assert raised.value.tool_call_id == call.id
    assert effects(session.setup) == [] and await session.version() == version
    assert await session.state() == before

    final = await session.agent.call(confirm(ask, confirmed=False), session.setup.ctx)
    assert final.get_text_content() == f"done: {hitl_mod.REJECTED}" and effects(session.setup) == []


async def test_remember_on_a_rejected_call_is_refused(session: Session) -> None:
    ask = await session.pause()
    version = await session.version()
    with pytest.raises(HITLError, match="remember") as raised:
        await session.agent.call(confirm(ask, confirmed=False, remember=True), session.setup.ctx)
    assert raised.value.tool_call_id == ask.tool_calls[0].id
    assert await session.version() == version and effects(session.setup) == []
    await session.agent.call(confirm(ask), session.setup.ctx)
    assert effects(session.setup) == ["hello"]


async def test_answering_a_call_that_already_ran_is_refused(session: Session) -> None:
    step = ScriptedModel.tool_calls([("whoami", {}), ("guarded", {"text": "a"})])
    session.agent.loop.model = session.model = ScriptedModel([step, "finished"])
    ask = await session.pause("go")
    ran = step.tool_calls[0].id
    extra = ConfirmResult(tool_call_id=ran, confirmed=True)
    event = confirm(ask)
    event.results.append(extra)
    version = await session.version()
    with pytest.raises(HITLError, match=ran):
        await session.agent.call(event, session.setup.ctx)
    with pytest.raises(HITLError, match="no decision"):
        await session.agent.call(
            UserConfirmResultEvent(reply_id=ask.reply_id, results=[]), session.setup.ctx
        )
    assert await session.version() == version and effects(session.setup) == []
    await session.agent.call(confirm(ask), session.setup.ctx)
    assert effects(session.setup) == ["a"]
