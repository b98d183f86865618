"""``agentscope-teams run``: a lead with subagents against a real local OpenAI-compatible server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from ..model.fake_openai import FakeOpenAI, Reply, chunk
from .conftest import Cli

REPO = Path(__file__).resolve().parents[2]


def _text(text: str) -> Reply:
    return Reply(sse=[chunk({"role": "assistant", "content": text}), chunk({}, "stop"), "[DONE]"])


def _spawn(agent: str, task: str) -> Reply:
    call = {
        "index": 0,
        "id": "call-1",
        "type": "function",
        "function": {
            "name": "agent_spawn",
            "arguments": json.dumps({"agent": agent, "task": task}),
        },
    }
    return Reply(
        sse=[chunk({"role": "assistant", "tool_calls": [call]}), chunk({}, "tool_calls"), "[DONE]"]
    )


def _run_turn(cli: Cli, server: FakeOpenAI, prompt: str) -> subprocess.CompletedProcess[str]:
    """One ``run`` turn of alice's session s1 against the fake endpoint and the test store."""
    return cli.run(
        "run", "--specs", str(REPO / "specs"), "--model", "openai-compatible:fake",
        "--session", "s1", "--user", "alice", "--store", cli.url, prompt,
        OPENAI_BASE_URL=server.url, OPENAI_API_KEY="sk-test-run",
    )  # fmt: skip


def test_run_delegates_to_a_subagent_and_keeps_the_session(cli: Cli, tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        server.add(
            _spawn("reviewer", "review app.py"),
            _text("app.py looks fine"),
            _text("The reviewer found nothing to fix."),
            _text("Still nothing to fix."),
        )
        first = _run_turn(cli, server, "review app.py")
        assert first.returncode == 0, first.stderr
        assert "-> agent_spawn" in first.stdout
        assert "The reviewer found nothing to fix." in first.stdout
        lead_tools = {t["function"]["name"] for t in server.requests[0].body["tools"]}
        assert {"agent_spawn", "agent_list", "createTeam", "read_file"} <= lead_tools
        child_system = server.requests[1].body["messages"][0]["content"]
        assert "code reviewer" in child_system
        second = _run_turn(cli, server, "anything else?")
        assert second.returncode == 0, second.stderr
        texts = [m.get("content") for m in server.requests[-1].body["messages"]]
        assert "review app.py" in texts and "anything else?" in texts
    listed = cli("sessions", "list", "--user", "alice")
    assert listed.returncode == 0 and "s1" in listed.stdout


def test_run_ends_with_the_tokens_each_agent_reported(cli: Cli) -> None:
    with FakeOpenAI() as server:
        usage = chunk(None)  # prompt 11, completion 7
        server.add(
            Reply(sse=[*_spawn("reviewer", "look").sse[:-1], usage, "[DONE]"]),
            Reply(
                sse=[
                    chunk({"role": "assistant", "content": "ok"}),
                    chunk({}, "stop"),
                    usage,
                    "[DONE]",
                ]
            ),
            Reply(
                sse=[
                    chunk({"role": "assistant", "content": "done"}),
                    chunk({}, "stop"),
                    usage,
                    "[DONE]",
                ]
            ),
        )
        result = _run_turn(cli, server, "review app.py")
    assert result.returncode == 0, result.stderr
    tail = result.stdout[result.stdout.index("tokens used (as reported by the model):") :]
    table = tail.splitlines()[1:]
    table = table[: next(i for i, line in enumerate(table) if line.split()[:1] == ["total"]) + 1]
    rows = [line.split(maxsplit=1) for line in table]
    assert rows == [
        ["lead", "36 (input 22, output 14; 2 requests)"],
        ["reviewer", "18 (input 11, output 7; 1 requests)"],
        ["total", "54"],
    ]
