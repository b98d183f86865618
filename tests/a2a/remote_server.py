"""A plain a2a-sdk agent (no agentscope_teams code), for our client to drive as a subagent.

``python -m tests.a2a.remote_server KEY PORT``: requests must carry ``X-Api-Key: KEY``. "ask"
puts the task in input-required ("What is your name?") and the next message on it completes it
with "hello <name>"; "slow" works until cancelled; "fail" fails; anything else is answered with
"remote says: <text>".
"""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from a2a.helpers.proto_helpers import new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Task,
    TaskState,
    TaskStatus,
)
from starlette.applications import Starlette
from starlette.responses import JSONResponse


class Executor(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: object) -> None:
        assert context.task_id and context.context_id
        queue = event_queue
        if context.current_task is None:
            await queue.enqueue_event(  # type: ignore[attr-defined]
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                )
            )
        updater = TaskUpdater(queue, context.task_id, context.context_id)  # type: ignore[arg-type]
        text = context.get_user_input()
        current = context.current_task
        if current is not None and current.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([new_text_part(f"hello {text}")], name="answer")
            await updater.complete()
            return
        await updater.start_work()
        if text == "ask":
            question = updater.new_agent_message([new_text_part("What is your name?")])
            await updater.requires_input(question)
        elif text == "slow":
            await asyncio.sleep(300)
        elif text == "fail":
            await updater.failed(updater.new_agent_message([new_text_part("it broke")]))
        else:
            await updater.add_artifact([new_text_part(f"remote says: {text}")], name="answer")
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: object) -> None:
        assert context.task_id and context.context_id
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()  # type: ignore[arg-type]


def agent_card(url: str) -> AgentCard:
    """The card of this agent, naming ``url`` as its JSON-RPC endpoint."""
    return AgentCard(
        name="remote",
        description="A plain a2a-sdk agent",
        version="1.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="answers", tags=["test"])],
    )


def open_app(port: int) -> Starlette:
    """The agent and its card on ``port``, asking for no key."""
    card = agent_card(f"http://127.0.0.1:{port}/")
    handler = DefaultRequestHandler(
        agent_executor=Executor(), task_store=InMemoryTaskStore(), agent_card=card
    )
    return Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])


def app(key: str, port: int) -> Starlette:
    inner = open_app(port)

    async def guarded(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        if scope["type"] == "http" and (b"x-api-key", key.encode()) not in scope["headers"]:
            await JSONResponse({"error": "bad key"}, status_code=401)(scope, receive, send)  # type: ignore[arg-type]
            return
        await inner(scope, receive, send)  # type: ignore[arg-type]

    return guarded  # type: ignore[return-value]


if __name__ == "__main__":
    port = int(sys.argv[2])
    uvicorn.run(app(sys.argv[1], port), host="127.0.0.1", port=port, log_level="warning")
