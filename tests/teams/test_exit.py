"""Leaving ``async with lead:`` always finishes: the team runtime, its listeners and the store's signal
reader end even when a library swallows one cancellation (``asyncio.wait_for`` on Python 3.11 does
when its operation completes as the cancel arrives; redis-py sends each command through it)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest

from agentscope_teams import HarnessAgent
from agentscope_teams.agent.extension import Extension
from agentscope_teams.context import RuntimeContext
from agentscope_teams.model.scripted import ScriptedModel
from agentscope_teams.store import BaseStore, Entry, Key
from agentscope_teams.store._redis_signals import Subscriber
from agentscope_teams.store.base import signals_of
from agentscope_teams.store.memory import InMemoryStore
from agentscope_teams.teams import LocalTeamClient, TeamLeadExtension, TeamRuntime

from ..backends import StoreSpec
from .helpers import SPEC_DIR, eventually, member_runtime

REPRO = Path(__file__).with_name("exit_repro.py")
#: A run of the repro takes about 2 s; a run still going after this long hangs.
RUN_TIMEOUT = 90.0
#: An in-process close takes milliseconds; one still waiting after this long never ends. (A
#: deadline, not fail_after: the old code swallowed the deadline's own cancellation too.)
LIVENESS = 30.0


def _run_repro(url: str, org: str, workspace: Path) -> str:
    """'exited' if the script left ``async with lead:``, 'hung' at the timeout, else its failure."""
    cmd = [sys.executable, str(REPRO), url, org, "s-lead", str(workspace)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        return "hung"
    if done.returncode == 0 and done.stdout.endswith("exited\n"):
        return "exited"
    return f"exit code {done.returncode}: {done.stderr[-2000:]}"


def _session(url: str, workspace: Path) -> list[str]:
    """Run the repro twice with one session: the second run continues the first's session."""
    org = "exit-" + uuid.uuid4().hex[:12]  # a key prefix of its own on a shared server
    return [_run_repro(url, org, workspace) for _ in range(2)]


def test_lead_script_exits(store_spec: StoreSpec, tmp_path: Path) -> None:
    """The issue's repro as a real script (a lead forms a team that runs in its process), run as
    a subprocess: every run leaves ``async with lead:``. On Redis three sessions run at once, each
    run and then continued (6 runs): before the fix 3 to 5 of 6 hung (five batches measured)."""
    sessions = 3 if store_spec.backend == "redis" else 1
    with ThreadPoolExecutor(sessions) as pool:
        runs = pool.map(lambda i: _session(store_spec.url, tmp_path / f"ws{i}"), range(sessions))
        outcomes = [outcome for session in runs for outcome in session]
    hung = outcomes.count("hung")
    assert outcomes == ["exited"] * (2 * sessions), f"{hung} of {len(outcomes)} runs hung"


class SwallowsOneCancel:
    """A store whose next ``get`` or ``get_many`` (the step's read of the team record, with the
    inbox cursors) after :meth:`arm` waits until it is cancelled and then completes anyway: what
    ``asyncio.wait_for`` does on Python 3.11 when the operation it waits for finishes as the
    cancel arrives (the cancel is lost; the caller carries on)."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.signals_enabled = signals_of(inner) is not None
        self.armed = False
        self.parked = asyncio.Event()
        self.swallowed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def arm(self) -> None:
        self.armed = True

    async def _park(self) -> None:
        if self.armed:
            self.armed = False
            self.parked.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.swallowed += 1

    async def get(self, key: Key) -> Entry | None:
        await self._park()
        return await self.inner.get(key)

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        await self._park()
        return await self.inner.get_many(keys)

    async def signal(self, channel: Key) -> None:
        await self.inner.signal(channel)  # type: ignore[attr-defined]

    async def wait_signal(self, channels: Sequence[Key], timeout: float) -> bool:  # noqa: ASYNC109
        return bool(await self.inner.wait_signal(channels, timeout))  # type: ignore[attr-defined]


async def test_close_ends_the_runtime_when_a_store_call_swallows_its_cancel(
    store_spec: StoreSpec, tmp_path: Path, ns: str
) -> None:
    """The root cause, in process: the supervisor is inside a store call that swallows the
    cancellation. Closing still ends it (the old single ``Task.cancel()`` was lost and the loop
    ran on: ``aclose`` never returned), and nothing is left running once the store is closed."""
    ctx = RuntimeContext(session_id="s-lead", user_id="alice", org_id=ns)
    before = asyncio.all_tasks()
    async with store_spec.open() as store:
        team = await LocalTeamClient(store, ctx).create_team("crew")
        swallowing = SwallowsOneCancel(store)
        runtime = member_runtime(swallowing, tmp_path, ctx, team.id, ScriptedModel([]), poll=0.05)
        await eventually(lambda: _stepped(runtime.steps))
        swallowing.arm()
        await swallowing.parked.wait()  # the supervisor waits inside the store call now
        with anyio.move_on_after(LIVENESS) as waited:  # unfixed, this close never returned
            await runtime.aclose()
        assert not waited.cancel_called, "closing the runtime did not finish"
        assert swallowing.swallowed == 1
    left = {t for t in asyncio.all_tasks() - before if not t.done()}
    assert [t.get_name() for t in left] == []


async def _stepped(steps: int) -> bool:
    return steps >= 1


class _SwallowingPubSub:
    """A redis-py PubSub whose read swallows the first cancellation (see SwallowsOneCancel)."""

    def __init__(self) -> None:
        self.reading = asyncio.Event()
        self.swallowed = 0
        self.closed = False

    async def subscribe(self, *names: str) -> None:
        return None

    async def get_message(self, **options: Any) -> dict[str, Any] | None:
        self.reading.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if self.swallowed:
                raise
            self.swallowed += 1
        return None

    async def aclose(self) -> None:
        self.closed = True


class _Client:
    def __init__(self) -> None:
        self.pubsub_ = _SwallowingPubSub()

    def pubsub(self, **options: Any) -> _SwallowingPubSub:
        return self.pubsub_


async def test_closing_the_redis_subscriber_ends_a_reader_that_swallowed_its_cancel() -> None:
    """The store's signal reader is stopped the same way: a read that swallows one cancellation
    does not keep the reader, and the store's ``aclose``, waiting forever."""
    client = _Client()
    subscriber = Subscriber(client)
    assert await subscriber.wait(["ch"], 0) is False  # starts the reader
    await client.pubsub_.reading.wait()
    reader = subscriber._reader
    assert reader is not None
    with anyio.move_on_after(LIVENESS) as waited:  # unfixed, the reader read on: never returned
        await subscriber.aclose()
    assert not waited.cancel_called, "closing the subscriber did not finish"
    assert reader.done() and client.pubsub_.swallowed == 1 and client.pubsub_.closed


class _FailsToClose(Extension):
    async def aclose(self) -> None:
        raise RuntimeError("this extension could not close")


async def test_leaving_the_lead_closes_everything_after_an_extension_failed_to(
    tmp_path: Path, alice: RuntimeContext
) -> None:
    """An extension whose close raises does not keep the team runtime after it, or the store the
    lead opened, from closing; the error is still raised."""
    ext = TeamLeadExtension(SPEC_DIR, member_model=ScriptedModel([]), poll=0.05)
    form = [("createTeam", {"name": "crew"}), ("spawnMember", {"name": "r", "spec": "reviewer"})]
    lead = HarnessAgent(
        "lead",
        ScriptedModel([ScriptedModel.tool_calls(form), "formed"]),
        workspace=tmp_path,
        store="memory://",
        extensions=[_FailsToClose(), ext],
    )
    closed: list[str] = []

    async def close_store() -> None:
        closed.append("store")

    lead.sessions.store.aclose = close_store  # type: ignore[method-assign]
    before = asyncio.all_tasks()
    with pytest.raises(RuntimeError, match="could not close"):
        async with lead:
            await lead.call("form a team", alice)
            assert ext.runtime is not None and ext.runtime.refs  # serving the team
    assert closed == ["store"]
    assert [t.get_name() for t in asyncio.all_tasks() - before if not t.done()] == []


async def test_close_stops_a_supervisor_that_another_task_runs() -> None:
    """``Worker.run`` awaits ``serve_forever`` in its own task: closing the runtime from elsewhere
    ends that call too (it used to stop the members while the supervisor ran on)."""
    runtime = TeamRuntime(InMemoryStore(), poll=0.05)
    returned = anyio.Event()

    async def serve() -> None:
        await runtime.serve_forever()
        returned.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        await eventually(lambda: _stepped(runtime.steps))
        await runtime.aclose()
        with anyio.move_on_after(LIVENESS) as waited:
            await returned.wait()
        assert not waited.cancel_called, "serve_forever ran on after aclose"
