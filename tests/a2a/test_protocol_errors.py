"""What an A2A caller is told when a request cannot be served, in-process through the app's ASGI
interface: each error names what was wrong and what to do (cancelling an ended task, an unknown
agent's path, a contextId that cannot be a session), and callers without credentials, who cannot
be told apart, are never handed each other's tasks in a list."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

pytest.importorskip("a2a")

from agentscope_teams import HarnessAgent
from agentscope_teams.a2a_server import Caller, ExposedAgent, StaticTokens, a2a_app
from agentscope_teams.model import ScriptedModel
from agentscope_teams.store.memory import InMemoryStore

from ..backends import unique_namespace

ALICE = "alice-a2a-token-0123456789"


class Rpc:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def __call__(
        self, method: str, params: dict[str, Any], *, token: str | None = None, path: str = "/lead/"
    ) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return await self.http.post(path, json=body, headers=headers)

    async def send(self, text: str, *, token: str | None = None, **more: str) -> dict[str, Any]:
        message = {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}], **more}
        answer: dict[str, Any] = (
            await self("SendMessage", {"message": message}, token=token)
        ).json()
        return answer


@pytest.fixture
async def rpc() -> AsyncIterator[Rpc]:
    """An app letting anonymous callers in, alice with a token."""
    store = InMemoryStore()
    agent = HarnessAgent("lead", ScriptedModel(lambda r: "done"), "lead", store=store)
    tokens = StaticTokens({ALICE: Caller("alice", unique_namespace())})
    app = a2a_app([ExposedAgent(agent)], store, verifier=tokens, anonymous=True)
    transport = httpx.ASGITransport(app=app)
    async with agent, httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        http.headers["A2A-Version"] = "1.0"
        yield Rpc(http)
    await app.aclose()


async def test_cancelling_an_ended_task_says_it_has_ended(rpc: Rpc) -> None:
    task = (await rpc.send("hi", token=ALICE))["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    error = (await rpc("CancelTask", {"id": task["id"]}, token=ALICE)).json()["error"]
    assert error["code"] == -32002  # TaskNotCancelableError, as the protocol says
    assert task["id"] in error["message"] and "completed" in error["message"], error
    assert "already ended" in error["message"], error


async def test_an_unknown_agent_is_a_json_error_naming_the_served_ones(rpc: Rpc) -> None:
    answer = await rpc("GetTask", {"id": "x"}, token=ALICE, path="/leed/")
    assert answer.status_code == 404
    error = answer.json()["error"]
    assert "'/leed/'" in error and "serves /lead/" in error, error
    inner = (await rpc("GetTask", {"id": "x"}, token=ALICE, path="/lead/nothing")).json()
    assert "'/lead/nothing'" in inner["error"] and "serves /lead/" in inner["error"], inner


async def test_a_context_id_that_cannot_be_a_session_is_invalid_params(rpc: Rpc) -> None:
    answer = await rpc.send("hi", token=ALICE, contextId="c" * 300)
    error = answer["error"]
    assert error["code"] == -32602, error  # the caller's mistake, not a failed task
    assert "contextId" in error["message"] and "256" in error["message"], error
    control = await rpc.send("hi", token=ALICE, contextId="c" * 200)
    assert control["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_callers_without_credentials_are_not_listed_each_others_tasks(rpc: Rpc) -> None:
    mine = (await rpc.send("my secret plan"))["result"]["task"]  # one anonymous caller
    listed = (await rpc("ListTasks", {})).json()  # another one, indistinguishable
    assert "result" not in listed or mine["id"] not in str(listed), listed
    error = listed["error"]
    assert "Authorization: Bearer" in error["message"] and "GetTask" in error["message"], error
    # control: a caller with a token lists its own tasks
    own = (await rpc.send("hello", token=ALICE))["result"]["task"]
    tasks = (await rpc("ListTasks", {}, token=ALICE)).json()["result"]["tasks"]
    assert [t["id"] for t in tasks] == [own["id"]]


async def test_a_message_to_an_ended_task_says_how_to_go_on(rpc: Rpc) -> None:
    task = (await rpc.send("hi", token=ALICE))["result"]["task"]
    more = {"taskId": task["id"], "contextId": task["contextId"]}
    error = (await rpc.send("and then?", token=ALICE, **more))["error"]
    assert error["code"] == -32004, error  # UnsupportedOperationError, as the SDK answers
    text = error["message"]
    assert task["id"] in text and "completed" in text and "without a taskId" in text, text
    followed = (await rpc("SubscribeToTask", {"id": task["id"]}, token=ALICE)).json()["error"]
    assert "completed" in followed["message"] and "GetTask" in followed["message"], followed
    # control: the same context goes on in a new task
    again = await rpc.send("and then?", token=ALICE, contextId=task["contextId"])
    assert again["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
