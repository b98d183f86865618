"""``agentscope-teams serve --a2a``: the control plane and the lead agent over A2A in one process;
A2A callers use the control plane's operator tokens."""

from __future__ import annotations

import subprocess
from pathlib import Path

import anyio
import httpx
import pytest
from a2a.types.a2a_pb2 import TaskState
from a2a.utils.errors import InvalidParamsError

from ..cli.conftest import CLI, REPO, Cli
from .helpers import answer_of, free_port, sdk_client, send, user_message, wait_for_port

pytest.importorskip("a2a")


def test_serve_a2a_takes_the_operator_token(cli: Cli, tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    specs.mkdir()
    port = free_port()
    args = ["--store", cli.url, "serve", "--port", str(port), "--user", "alice", "--a2a"]
    args += ["--specs", str(specs), "--model", "python:tests.a2a.agent_server:model"]
    env = cli.env(PYTHONPATH=str(REPO))
    proc = subprocess.Popen([str(CLI), *args], env=env, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        wait_for_port(port, proc, "serve --a2a")  # type: ignore[arg-type]
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]
        token = lines[3].strip()
        base = f"http://127.0.0.1:{port}"
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
    finally:
        proc.terminate()
        proc.wait(15)
