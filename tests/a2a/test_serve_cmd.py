"""``agentscope-teams serve --a2a``: the control plane and the lead agent over A2A in one process;
A2A callers use the control plane's operator tokens. Two such processes share one Redis store: a
client that follows a task through the process not running it gets its live events."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from a2a.types.a2a_pb2 import SubscribeToTaskRequest, TaskState
from a2a.utils.errors import InvalidParamsError

from ..backends import REDIS_URL, unique_namespace
from ..cli.conftest import CLI, REPO, Cli
from ..conftest import require_service
from .helpers import answer_of, free_port, sdk_client, send, user_message

pytest.importorskip("a2a")


@pytest.fixture(scope="module")
def two_serves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple[str, str]]]:
    """Two ``serve --a2a`` processes over one Redis store: the base URL of each and the operator
    token it printed (both for alice, in an org of this module)."""
    require_service("redis")
    cli = Cli(tmp_path_factory.mktemp("serve-a2a"))
    specs = cli.tmp_path / "specs"
    specs.mkdir()
    org = unique_namespace()
    started: list[tuple[subprocess.Popen[str], int]] = []
    try:
        for _ in range(2):
            port = free_port()
            args = ["--store", REDIS_URL, "serve", "--port", str(port), "--user", "alice"]
            args += ["--org", org, "--a2a", "--specs", str(specs)]
            args += ["--model", "python:tests.a2a.agent_server:model"]
            env = cli.env(PYTHONPATH=str(REPO))
            proc = subprocess.Popen(
                [str(CLI), *args], env=env, cwd=REPO, stdout=subprocess.PIPE, text=True
            )
            started.append((proc, port))
        served = []
        for proc, port in started:
            assert proc.stdout is not None
            lines = [proc.stdout.readline() for _ in range(4)]  # printed once it listens
            assert lines[0].startswith("agentscope-teams control plane on"), lines
            served.append((f"http://127.0.0.1:{port}", lines[3].strip()))
        yield served
    finally:
        for proc, _ in started:
            proc.terminate()
        for proc, _ in started:
            proc.wait(15)


def test_serve_a2a_takes_the_operator_token(two_serves: list[tuple[str, str]]) -> None:
    base, token = two_serves[0]
    url = f"{base}/a2a/lead/"
    assert httpx.get(f"{base}/healthz").status_code == 200  # the control plane still serves
    assert httpx.get(url + ".well-known/agent-card.json").status_code == 401

    async def call() -> None:
        client = await sdk_client(url, token)
        task = await send(client, user_message("hi from a2a"))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert answer_of(task) == "echo: hi from a2a"
        request = user_message("push to my loopback")  # this server would POST there: SSRF
        request.configuration.task_push_notification_config.url = "http://127.0.0.1:9/h"
        with pytest.raises(InvalidParamsError):
            await send(client, request)

    anyio.run(call)


def test_a_resubscribe_through_the_other_serve_gets_the_live_events(
    two_serves: list[tuple[str, str]], tmp_path: Path
) -> None:
    (first, first_token), (second, second_token) = two_serves
    gate = tmp_path / "gate"

    async def follow() -> list[Any]:
        request = user_message(f"hold until {gate}")
        request.configuration.return_immediately = True
        started = await send(await sdk_client(f"{first}/a2a/lead/", first_token), request)
        other = await sdk_client(f"{second}/a2a/lead/", second_token, streaming=True)
        events = []
        with anyio.fail_after(60):  # a liveness guard, not a timing threshold
            async for event in other.subscribe(SubscribeToTaskRequest(id=started.id)):
                events.append(event)
                gate.touch()  # the answer comes only once the second process follows the task
        return events

    events = anyio.run(follow)
    assert events[0].HasField("task")
    assert events[0].task.status.state != TaskState.TASK_STATE_COMPLETED
    answers = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    assert answers and answers[-1].parts[0].text == "released"  # made by the first process
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
