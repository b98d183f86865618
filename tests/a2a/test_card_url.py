"""The URL an Agent Card advertises is the operator's: the configured public URL (``a2a_app
(public_url=...)``, ``serve --a2a --public-url``), else the address the server is bound to; never
the request's Host header, which any client can set (it would make the server send other clients
to a host of the attacker's choosing)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from agentscope_teams import HarnessAgent
from agentscope_teams.a2a_server import ExposedAgent, a2a_app
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore

from ..cli.conftest import CLI, REPO, Cli, one_error_line
from .helpers import free_port, processes, write_tokens

TOKEN = "alice-a2a-token-0123456789"
FORGED = {"Host": "attacker.example:666"}


def _interface_url(card: httpx.Response) -> str:
    assert card.status_code == 200, card.text
    url: str = card.json()["supportedInterfaces"][0]["url"]
    return url


def test_without_a_public_url_the_card_names_the_bound_address(tmp_path: Path) -> None:
    tokens = write_tokens(tmp_path / "tokens.json", {TOKEN: {"user": "alice", "org": "acme"}})
    argv = ["tests.a2a.agent_server", f"file://{tmp_path / 'store'}", str(tokens)]
    with processes(argv) as (port,):
        card = httpx.get(
            f"http://127.0.0.1:{port}/a2a/lead/.well-known/agent-card.json",
            headers={**FORGED, "Authorization": f"Bearer {TOKEN}"},
        )
    assert _interface_url(card) == f"http://127.0.0.1:{port}/a2a/lead/"


async def test_a_public_url_is_what_the_card_names() -> None:
    store = InMemoryStore()
    agent = HarnessAgent("lead", ScriptedModel(["hi"]), "lead", store=store)
    app = a2a_app(
        [ExposedAgent(agent)],
        store,
        verifier=None,
        anonymous=True,
        public_url="https://agents.example.com/a2a/",
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        card = await http.get("/lead/.well-known/agent-card.json", headers=FORGED)
    await app.aclose()
    assert _interface_url(card) == "https://agents.example.com/a2a/lead/"


@pytest.mark.parametrize(
    "bad", ["agents.example.com", "ftp://agents.example.com", "https://a.example.com/?x=1", ""]
)
def test_a_public_url_that_is_not_an_http_base_url_is_refused(bad: str) -> None:
    exposed = [ExposedAgent(HarnessAgent("lead", ScriptedModel(["hi"]), "lead"))]
    with pytest.raises(ConfigurationError, match="public_url"):
        a2a_app(exposed, InMemoryStore(), verifier=None, anonymous=True, public_url=bad)


def test_serve_a2a_public_url_and_task_retention(tmp_path: Path) -> None:
    """``--public-url`` is what the card names; ``--a2a-task-retention`` is how long an ended task
    is kept (then GetTask says it may have ended longer ago than that), and the expired record's
    file leaves the file store while the server runs (``--expiry-sweep``); bad values of these
    and of ``--a2a-input-timeout`` are refused at startup, naming the flag."""
    cli = Cli(tmp_path)
    (tmp_path / "specs").mkdir()
    port = free_port()
    args = ["--store", cli.url, "serve", "--port", str(port), "--user", "alice", "--a2a"]
    args += ["--specs", str(tmp_path / "specs"), "--model", "python:tests.a2a.agent_server:model"]
    args += ["--a2a-public-card", "--public-url", "https://agents.example.com"]
    args += ["--a2a-task-retention", "1", "--a2a-input-timeout", "3600", "--expiry-sweep", "0.2"]
    env = cli.env(PYTHONPATH=str(REPO))
    proc = subprocess.Popen([str(CLI), *args], env=env, cwd=REPO, stdout=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}/a2a/lead/"
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]  # printed once it listens
        assert lines[0].startswith("agentscope-teams control plane on"), lines
        card = httpx.get(base + ".well-known/agent-card.json", headers=FORGED)
        headers = {"Authorization": f"Bearer {lines[3].strip()}", "A2A-Version": "1.0"}

        def rpc(method: str, params: dict[str, object]) -> dict[str, Any]:
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer: dict[str, Any] = httpx.post(base, json=body, headers=headers).json()
            return answer

        message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        task = rpc("SendMessage", {"message": message})["result"]["task"]
        assert task["status"]["state"] == "TASK_STATE_COMPLETED"
        records = cli.store_dir / "kv" / "a2a-tasks"
        assert list(records.rglob("*.json")), "the task's record is not where the test looks"
        deadline = time.monotonic() + 30  # a liveness guard, not a timing threshold
        while "error" not in (got := rpc("GetTask", {"id": task["id"]})):
            assert time.monotonic() < deadline, "the ended task was never removed"
            time.sleep(0.1)
        while list(records.rglob("*.json")):  # the sweep removes the expired record's file
            assert time.monotonic() < deadline, "the expired task's file was never removed"
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(15)
    assert _interface_url(card) == "https://agents.example.com/a2a/lead/"
    assert "more than 1 s ago" in got["error"]["message"], got
    usage = cli.run("serve", "--help").stdout
    assert "--public-url" in usage and "Host header" in usage and "--a2a-task-retention" in usage
    assert "--a2a-input-timeout" in usage and "--expiry-sweep" in usage
    specs = ["serve", "--a2a", "--specs", str(tmp_path / "specs")]
    bad_values = [("--public-url", "x.example"), ("--a2a-task-retention", "0")]
    bad_values += [("--a2a-input-timeout", "-1"), ("--expiry-sweep", "0")]
    for flag, bad in bad_values:
        refused = cli(*specs, flag, bad)
        assert refused.returncode != 0 and flag in one_error_line(refused)
