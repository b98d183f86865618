"""Our agent published over A2A, driven by the a2a-sdk's own client against real server processes
that share one Redis store: a multi-turn exchange whose ``input-required`` pause is answered
through the second process, streaming, cancel (also from another process), and auth."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import anyio
import httpx
import pytest
from a2a.helpers.proto_helpers import get_data_parts
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError

from agentscope_teams.model import ScriptedModel

from ..backends import SERVICE_URLS, unique_namespace
from ..conftest import require_service
from .helpers import (
    Step,
    answer_of,
    last_output,
    lead_run,
    processes,
    run_id,
    sdk_client,
    send,
    spawn,
    status_text,
    user_message,
    write_tokens,
)

pytest.importorskip("a2a")
ALICE, BOB = "alice-a2a-token-0123456789", "bob-a2a-token-9876543210"


class _ServerPairs:
    """Pairs of server processes, one per store, started when a test first asks and shared by the
    module's tests (each test uses its own contexts and tasks); alice and bob in an org of the
    module."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.stack, self.pairs = folder, ExitStack(), dict[str, list[str]]()
        org = unique_namespace()
        self.tokens = write_tokens(
            folder / "tokens.json",
            {ALICE: {"user": "alice", "org": org}, BOB: {"user": "bob", "org": org}},
        )

    def __call__(self, backend: str) -> list[str]:
        if backend not in self.pairs:
            if backend == "file":
                url = f"file://{self.folder / 'store'}"
            else:
                require_service(backend)
                url = SERVICE_URLS[backend]
            argv = ["tests.a2a.agent_server", url, str(self.tokens)]
            ports = self.stack.enter_context(processes(argv, argv))
            self.pairs[backend] = [f"http://127.0.0.1:{port}/a2a/lead/" for port in ports]
        return self.pairs[backend]


@pytest.fixture(scope="module")
def server_pairs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_ServerPairs]:
    pairs = _ServerPairs(tmp_path_factory.mktemp("a2a-servers"))
    with pairs.stack:
        yield pairs


@pytest.fixture
def two_servers(server_pairs: _ServerPairs) -> list[str]:
    """Two server processes over one Redis store."""
    return server_pairs("redis")


@pytest.fixture(params=["redis", "postgres"])
def two_servers_any(request: pytest.FixtureRequest, server_pairs: _ServerPairs) -> list[str]:
    """As ``two_servers``, over Redis and over PostgreSQL."""
    return server_pairs(request.param)


@pytest.fixture(params=["redis", "file"])
def two_servers_streaming(request: pytest.FixtureRequest, server_pairs: _ServerPairs) -> list[str]:
    """As ``two_servers``, over Redis (signals) and over the file store (polling)."""
    return server_pairs(request.param)


def test_input_required_is_answered_through_the_other_process(two_servers_any: list[str]) -> None:
    first_url, second_url = two_servers_any

    async def exchange() -> None:
        first = await sdk_client(first_url, ALICE)
        second = await sdk_client(second_url, ALICE)
        card = first._card  # resolved from the well-known path under the mount
        assert card.name == "lead" and card.capabilities.streaming
        assert "bearer" in card.security_schemes

        hello = await send(first, user_message("hello there"))
        assert hello.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer_of(hello) == "echo: hello there"
        context = hello.context_id

        paused = await send(first, user_message("please ask me", context=context))
        assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert "Which colour?" in status_text(paused)

        answered = await send(second, user_message("blue", task=paused.id, context=context))
        assert answered.id == paused.id
        assert answered.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer_of(answered) == "you chose {'Which colour?': 'blue'}"

        # the same context is one session: the third call sees every user turn
        recall = await send(second, user_message("recall", context=context))
        assert answer_of(recall) == "you said 3 things"
        seen = await first.get_task(GetTaskRequest(id=paused.id))  # from the shared store
        assert seen.status.state == TaskState.TASK_STATE_COMPLETED

        # another user never reaches alice's task or session
        bob = await sdk_client(first_url, BOB)
        with pytest.raises(TaskNotFoundError):
            await bob.get_task(GetTaskRequest(id=paused.id))
        own = await send(bob, user_message("recall", context=context))
        assert answer_of(own) == "you said 1 things"

    anyio.run(exchange)


def test_streaming_carries_artifact_and_status_updates(two_servers: list[str]) -> None:
    async def stream() -> list[str]:
        client = await sdk_client(two_servers[0], ALICE, streaming=True)
        kinds = []
        chunks = []
        async for event in client.send_message(user_message("stream these words")):
            kind = event.WhichOneof("payload")
            kinds.append(kind)
            if kind == "artifact_update":
                chunks.append(event.artifact_update)
            if kind == "status_update":
                last = event.status_update.status.state
        assert last == TaskState.TASK_STATE_COMPLETED
        assert len(chunks) > 2 and chunks[-1].last_chunk and not chunks[0].append
        assert all(c.append for c in chunks[1:-1])
        assert chunks[-1].artifact.parts[0].text == "echo: stream these words"
        return kinds

    kinds = anyio.run(stream)
    assert kinds[0] == "task" and "artifact_update" in kinds


def test_cancel_stops_the_call_in_either_process(two_servers: list[str]) -> None:
    first_url, second_url = two_servers

    async def cancel(via: str) -> None:
        first = await sdk_client(first_url, ALICE)
        canceller = await sdk_client(via, ALICE)
        request = user_message("be slow")
        request.configuration.return_immediately = True
        running = await send(first, request)
        assert running.status.state in (
            TaskState.TASK_STATE_SUBMITTED,
            TaskState.TASK_STATE_WORKING,
        )
        cancelled = await canceller.cancel_task(CancelTaskRequest(id=running.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        # the call stopped: the session is free for the next message at once
        after = await send(first, user_message("are you free", context=running.context_id))
        assert answer_of(after) == "echo: are you free"
        final = await first.get_task(GetTaskRequest(id=running.id))
        assert final.status.state == TaskState.TASK_STATE_CANCELED

    anyio.run(cancel, first_url)
    anyio.run(cancel, second_url)


def test_nothing_is_reachable_without_a_known_token(two_servers: list[str]) -> None:
    url = two_servers[0]
    card = url + ".well-known/agent-card.json"
    body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    for headers in ({}, {"Authorization": "Bearer not-a-known-token"}):
        assert httpx.get(card, headers=headers).status_code == 401
        refused = httpx.post(url, json=body, headers=headers)
        assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
    assert httpx.get(card, headers={"Authorization": f"Bearer {ALICE}"}).status_code == 200


def test_a_confirmation_is_given_through_the_other_process(two_servers: list[str]) -> None:
    async def confirm() -> None:
        first = await sdk_client(two_servers[0], ALICE)
        second = await sdk_client(two_servers[1], ALICE)
        paused = await send(first, user_message("please deploy"))
        assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert 'May I run deploy {"target": "prod"}?' in status_text(paused)
        done = await send(second, user_message("yes", task=paused.id, context=paused.context_id))
        assert answer_of(done) == "deploy said: deployed to prod"

    anyio.run(confirm)


def test_structured_output_is_a_data_part(two_servers: list[str]) -> None:
    async def judged() -> None:
        url = two_servers[0].replace("/a2a/lead/", "/a2a/judge/")
        client = await sdk_client(url, ALICE)
        assert "application/json" in client._card.default_output_modes
        task = await send(client, user_message("judge this"))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        (artifact,) = task.artifacts
        assert get_data_parts(list(artifact.parts)) == [{"verdict": "approve", "score": 7.0}]

    anyio.run(judged)


class _Receiver(BaseHTTPRequestHandler):
    bodies: ClassVar[list[bytes]] = []
    completed: ClassVar[threading.Event] = threading.Event()

    def do_POST(self) -> None:
        self.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
        if b"TASK_STATE_COMPLETED" in self.bodies[-1]:
            self.completed.set()
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_push_notifications_reach_the_callers_url(two_servers: list[str]) -> None:
    receiver = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    hook = f"http://127.0.0.1:{receiver.server_address[1]}/hook"

    async def pushed() -> str:
        client = await sdk_client(two_servers[0], ALICE)
        request = user_message("push me")
        request.configuration.task_push_notification_config.url = hook
        request.configuration.task_push_notification_config.token = "caller-token"
        task = await send(client, request)
        # a liveness guard, not a timing threshold
        assert await anyio.to_thread.run_sync(_Receiver.completed.wait, 30)
        return str(task.id)

    try:
        task_id = anyio.run(pushed)
    finally:
        receiver.shutdown()
    assert all(task_id.encode() in body for body in _Receiver.bodies)


def test_resubscribe_follows_a_running_task_to_its_cancel(two_servers: list[str]) -> None:
    async def follow() -> list[str]:
        client = await sdk_client(two_servers[0], ALICE, streaming=True)
        request = user_message("be slow again")
        request.configuration.return_immediately = True
        started = await send(await sdk_client(two_servers[0], ALICE), request)
        task_id = started.id
        seen: list[str] = []
        subscribed = anyio.Event()

        async def listen() -> None:
            async for event in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                subscribed.set()
                kind = event.WhichOneof("payload")
                state = (
                    event.task.status.state
                    if kind == "task"
                    else event.status_update.status.state
                    if kind == "status_update"
                    else None
                )
                if state is not None:
                    seen.append(TaskState.Name(state))

        async with anyio.create_task_group() as tg:
            tg.start_soon(listen)
            with anyio.fail_after(30):  # a liveness guard, not a timing threshold
                await subscribed.wait()
            await client.cancel_task(CancelTaskRequest(id=task_id))
        return seen

    seen = anyio.run(follow)
    assert seen[0] in ("TASK_STATE_SUBMITTED", "TASK_STATE_WORKING")
    assert seen[-1] == "TASK_STATE_CANCELED"


def test_a_resubscribe_through_the_other_process_gets_the_live_events(
    two_servers_streaming: list[str], tmp_path: Path
) -> None:
    """The task runs in the first process; the client follows it through the second, which reads
    the events the first appends to the store (a tool result, the answer, the end) as they come."""
    gate = tmp_path / "gate"

    async def follow() -> list[Any]:
        request = user_message(f"wait for {gate}")
        request.configuration.return_immediately = True
        started = await send(await sdk_client(two_servers_streaming[0], ALICE), request)
        other = await sdk_client(two_servers_streaming[1], ALICE, streaming=True)
        events = []
        with anyio.fail_after(60):  # a liveness guard, not a timing threshold
            async for event in other.subscribe(SubscribeToTaskRequest(id=started.id)):
                events.append(event)
                gate.touch()  # the task goes on only once the second process follows it
        return events

    events = anyio.run(follow)
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and events[0].task.status.state in (
        TaskState.TASK_STATE_SUBMITTED,
        TaskState.TASK_STATE_WORKING,
    )
    updates = [
        json.dumps(get_data_parts(list(e.status_update.status.message.parts)))
        for e in events
        if e.HasField("status_update")
    ]
    assert any("wait_for_file" in u and "opened" in u for u in updates)  # the tool's result
    answers = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    assert answers and answers[-1].parts[0].text == "the gate opened"
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


def test_our_client_drives_our_server(two_servers: list[str], tmp_path: Path) -> None:
    """Both directions at once: a lead's subagent is the lead served by the other processes;
    its ask_user_question reaches this lead, which answers with agent_send."""
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "remote.md").write_text(
        "---\ndescription: Our own agent, over A2A.\na2a:\n"
        f"  url: {two_servers[0]}.well-known/agent-card.json\n"
        f"  headers: {{Authorization: 'Bearer {ALICE}'}}\n  poll: 0.1\n---\n"
    )
    steps: list[Step] = [
        spawn("please ask me"),
        lambda r: ScriptedModel.tool_call("agent_send", {"run": run_id(r), "message": "green"}),
        "done",
    ]
    requests = lead_run(folder, steps)
    asked = last_output(requests[1]).output
    assert "[input required]" in asked and "Which colour?" in asked
    assert last_output(requests[2]).output.endswith("you chose {'Which colour?': 'green'}")


def test_another_caller_cannot_reach_a_task_by_its_id(two_servers: list[str]) -> None:
    """Bob, knowing the id of alice's running task, can neither cancel it, follow it, answer it,
    nor hang a push config on it (which would send him alice's events); alice can (control)."""
    from a2a.types.a2a_pb2 import (
        ListTasksRequest,
        TaskPushNotificationConfig,
    )

    async def attack() -> None:
        alice = await sdk_client(two_servers[0], ALICE)
        bob = await sdk_client(two_servers[1], BOB, streaming=True)
        request = user_message("be slow")
        request.configuration.return_immediately = True
        running = await send(alice, request)
        hook = TaskPushNotificationConfig(task_id=running.id, url="http://127.0.0.1:9/bob")
        with pytest.raises(TaskNotFoundError):
            await bob.cancel_task(CancelTaskRequest(id=running.id))
        with pytest.raises(TaskNotFoundError):
            await bob.create_task_push_notification_config(hook)
        with pytest.raises(TaskNotFoundError):
            async for _ in bob.subscribe(SubscribeToTaskRequest(id=running.id)):
                pass
        with pytest.raises(TaskNotFoundError):
            await send(bob, user_message("yes", task=running.id, context=running.context_id))
        listed = await bob.list_tasks(ListTasksRequest(context_id=running.context_id))
        assert running.id not in [t.id for t in listed.tasks]
        # control: alice's own cancel of the same id works
        cancelled = await alice.cancel_task(CancelTaskRequest(id=running.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED

    anyio.run(attack)
