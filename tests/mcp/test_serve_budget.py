"""Budgets and rate limits of the published lead: ``mcp-serve`` and ``serve --mcp --a2a`` with
``--max-tokens`` cap what each caller's session spends (a call on a spent session is an MCP tool
error, or a failed A2A task, naming the budget and by how much; other sessions and the server go
on), and ``--rate-limit`` (or a ``?query`` on ``--model``) is one limit for every caller.

The lead reports 600 tokens a call (:mod:`.budget_model`): with ``--max-tokens 1000`` a session's
first two calls are admitted (0 and 600 used, both under the limit) and its third is refused with
1,200 of 1,000 tokens used."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import mcp
import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from ..cli.conftest import CLI, REPO, Cli, one_error_line
from .budget_model import CALL_TOKENS
from .test_mcp_server import texts
from .test_serve_mcp import serving

MODEL = "python:tests.mcp.budget_model:model"
LIMIT = 1000
SPENT = f"is spent ({2 * CALL_TOKENS} of {LIMIT} tokens used)"


def _stdio(cli: Cli, *options: str) -> StdioServerParameters:
    specs = cli.tmp_path / "specs"
    specs.mkdir(exist_ok=True)
    args = ["--store", cli.url, "mcp-serve", "--specs", str(specs), "--user", "alice", *options]
    env = cli.env(PYTHONPATH=str(REPO))
    return StdioServerParameters(command=str(CLI), args=args, env=env, cwd=str(REPO))


async def _calls(client: Any, *calls: tuple[str, str | None]) -> list[Any]:
    """Each (message, session_id) called in turn (no session_id: the MCP session's own)."""
    results = []
    for message, session in calls:
        arguments = {"message": message} | ({"session_id": session} if session else {})
        results.append(await client.call_tool("lead", arguments))
    return results


def test_mcp_serve_a_spent_session_budget_is_a_tool_error_naming_it(cli: Cli) -> None:
    params = _stdio(cli, "--model", MODEL, "--max-tokens", str(LIMIT))

    async def client() -> list[Any]:
        async with mcp.Client(stdio_client(params), cache=None) as c:
            calls = [("one", None), ("two", None), ("three", None), ("other", "fresh")]
            return [*await _calls(c, *calls), *await _calls(c, ("four", None))]

    one, two, three, other, four = anyio.run(client)
    assert texts(one) == "echo: one" and texts(two) == "echo: two"
    session = one.meta["agentscope_teams"]["session_id"]
    assert three.is_error and texts(three).startswith(
        f"BudgetExceededError: budget session:/alice/{session} {SPENT}"
    )
    assert not other.is_error and texts(other) == "echo: other"  # a session of its own budget
    assert four.is_error and SPENT in texts(four)  # the server goes on; the session stays spent


def test_mcp_serve_one_rate_limit_for_every_caller(cli: Cli) -> None:
    """One request a minute, waiting at most 0.2 s for a turn: the first call takes the turn and
    a call of another session finds none (the limit is the model's, not a session's)."""
    params = _stdio(cli, "--model", f"{MODEL}?rpm=1&max_wait=0.2")

    async def client() -> list[Any]:
        async with mcp.Client(stdio_client(params), cache=None) as c:
            return await _calls(c, ("first", "s1"), ("second", "s2"))

    first, second = anyio.run(client)
    assert texts(first) == "echo: first"
    assert second.is_error and texts(second).startswith(
        "RateLimitWaitError: no turn of the shared rate limit of model"
    )


def test_mcp_serve_refuses_a_bad_budget_before_it_starts(cli: Cli) -> None:
    specs = cli.tmp_path / "specs"
    specs.mkdir()
    done = cli("mcp-serve", "--specs", str(specs), "--model", MODEL, "--max-tokens", "0")
    assert done.returncode == 1
    assert "invalid budget --max-tokens 0" in one_error_line(done)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[int, str]]:
    """A ``serve --mcp --a2a --max-tokens 1000`` process: its port and operator token."""
    pytest.importorskip("a2a")
    cli = Cli(tmp_path_factory.mktemp("serve-budget"))
    specs = cli.tmp_path / "specs"
    specs.mkdir()
    options = ["--mcp", "--a2a", "--specs", str(specs), "--model", MODEL]
    with serving(cli, *options, "--max-tokens", str(LIMIT)) as served:
        yield served


def test_serve_mcp_caps_each_session(served: tuple[int, str]) -> None:
    port, token = served

    async def client() -> list[Any]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        url = f"http://127.0.0.1:{port}/mcp"
        async with http, mcp.Client(streamable_http_client(url, http_client=http)) as c:
            calls = [("one", "m1"), ("two", "m1"), ("three", "m1"), ("other", "m2")]
            return await _calls(c, *calls)

    one, two, three, other = anyio.run(client)
    assert texts(one) == "echo: one" and texts(two) == "echo: two"
    assert three.is_error and f"budget session:/alice/m1 {SPENT}" in texts(three)
    assert texts(other) == "echo: other"


def test_serve_a2a_a_spent_session_fails_its_task_naming_the_budget(
    served: tuple[int, str],
) -> None:
    from a2a.types.a2a_pb2 import TaskState

    from ..a2a.helpers import answer_of, sdk_client, send, status_text, user_message

    port, token = served

    async def calls() -> list[Any]:
        client = await sdk_client(f"http://127.0.0.1:{port}/a2a/lead/", token)
        first = await send(client, user_message("one"))
        context = first.context_id
        rest = [await send(client, user_message(m, context=context)) for m in ("two", "three")]
        return [first, *rest, await send(client, user_message("other"))]

    one, two, three, other = anyio.run(calls)
    assert answer_of(one) == "echo: one" and answer_of(two) == "echo: two"
    assert three.status.state == TaskState.TASK_STATE_FAILED
    assert status_text(three).startswith(
        f"BudgetExceededError: budget session:/alice/{one.context_id} {SPENT}"
    )
    assert other.status.state == TaskState.TASK_STATE_COMPLETED  # a new context, its own budget
