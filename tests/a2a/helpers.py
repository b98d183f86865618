"""Start test A2A server processes and talk to them with the a2a-sdk's own client."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
from a2a.client import ClientConfig, create_client
from a2a.helpers.proto_helpers import get_artifact_text, get_text_parts, new_text_part
from a2a.types.a2a_pb2 import Message, Role, SendMessageRequest, Task

from agentscope_teams import HarnessAgent, RuntimeContext
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel
from agentscope_teams.store.memory import InMemoryStore

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str) -> None:
    for _ in range(600):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        time.sleep(0.05)
    raise RuntimeError(f"{what} did not listen on port {port}")


@contextmanager
def processes(*argvs: list[str]) -> Iterator[list[int]]:
    """Run each argv (a module and its arguments, the port last) until the block ends."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        ports = []
        for argv in argvs:
            port = free_port()
            proc = subprocess.Popen([sys.executable, "-m", *argv, str(port)], cwd=REPO)
            started.append(proc)
            ports.append(port)
        for port, proc, argv in zip(ports, started, argvs, strict=True):
            wait_for_port(port, proc, argv[0])
        yield ports
    finally:
        for proc in started:
            proc.terminate()
        for proc in started:
            proc.wait(15)


def write_tokens(path: Path, tokens: dict[str, dict[str, str]]) -> Path:
    path.write_text(json.dumps(tokens))
    return path


async def sdk_client(
    url: str, token: str | None, *, streaming: bool = False, headers: dict[str, str] | None = None
) -> Any:
    headers = {**(headers or {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    http = httpx.AsyncClient(headers=headers, timeout=60)
    return await create_client(url, ClientConfig(httpx_client=http, streaming=streaming))


def user_message(text: str, *, task: str = "", context: str = "") -> SendMessageRequest:
    message = Message(
        message_id=f"m-{time.monotonic_ns()}",
        role=Role.ROLE_USER,
        parts=[new_text_part(text)],
        task_id=task,
        context_id=context,
    )
    return SendMessageRequest(message=message)


async def send(client: Any, request: SendMessageRequest) -> Task:
    """The task a non-streaming send returns."""
    found = [event async for event in client.send_message(request)]
    assert len(found) == 1 and found[0].HasField("task"), found
    task: Task = found[0].task
    return task


def answer_of(task: Task) -> str:
    return "".join(get_artifact_text(a) for a in task.artifacts)


def status_text(task: Task) -> str:
    return "\n".join(get_text_parts(list(task.status.message.parts)))


def last_output(request: ModelRequest) -> ToolResultBlock:
    blocks = [b for b in request.messages[-1].content if isinstance(b, ToolResultBlock)]
    assert blocks, request.messages[-1]
    return blocks[0]


def run_id(request: ModelRequest) -> str:
    found = re.search(r"[Rr]un (r-\w+)", last_output(request).output)
    assert found, last_output(request).output
    return found[1]


Step = ModelResponse | str | Callable[[ModelRequest], ModelResponse | str]


def lead_run(folder: Path, steps: list[Step], *, trust: bool = True) -> list[ModelRequest]:
    """Run the lead once with ``steps``; the model requests it made."""
    model = ScriptedModel(steps)

    async def go() -> None:
        agent = HarnessAgent(
            "lead", model, "lead", specs=folder, store=InMemoryStore(), trust_project=trust
        )
        async with agent:
            await agent.call("go", RuntimeContext(session_id="s1", user_id="alice"))

    anyio.run(go)
    return model.requests


def spawn(task: str, timeout: float = 60) -> ModelResponse:
    return ScriptedModel.tool_call(
        "agent_spawn", {"agent": "remote", "task": task, "timeout_seconds": timeout}
    )
