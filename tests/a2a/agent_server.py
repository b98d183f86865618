"""A test A2A server process: our lead agent (a scripted model that answers from the request)
published with :func:`agentscope_teams.a2a_server.a2a_app`, mounted under ``/a2a`` of another
Starlette app, tasks in the store of ``argv[1]``.

``python -m tests.a2a.agent_server STORE_URL TOKENS_FILE PORT``. The model: a message containing
"ask me" calls ``ask_user_question``; the answer to it is echoed as "you chose X"; "slow" sleeps
(for cancel); "deploy" calls a tool that asks for confirmation; "wait for PATH" calls a tool that
waits until the file PATH exists; "hold until PATH" waits for it itself, then answers "released";
"recall" counts the user messages of the session; "crash" raises an OSError naming a file (a
bug's failure); anything else is echoed. A second agent,
"judge", answers with structured output.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import uvicorn
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.routing import Mount

from agentscope_teams import HarnessAgent
from agentscope_teams.a2a_server import ExposedAgent, StaticTokens, a2a_app
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel
from agentscope_teams.store.url import store_from_url
from agentscope_teams.tools.decorator import make_tool


async def answer(request: ModelRequest) -> ModelResponse | str:
    last = request.messages[-1]
    results = [b for b in last.content if isinstance(b, ToolResultBlock)]
    if results and results[0].name == "deploy":
        return f"deploy said: {results[0].output}"
    if results and results[0].name == "wait_for_file":
        return f"the gate {results[0].output}"
    if results:
        return f"you chose {results[0].data.get('answers', {}) if results[0].data else 'nothing'}"
    text = last.get_text_content()
    if text.startswith("hold until "):  # the model itself waits: no tool needed (serve --a2a)
        gate = anyio.Path(text[len("hold until ") :])
        with anyio.fail_after(60):
            while not await gate.exists():  # noqa: ASYNC110 - another process opens it
                await anyio.sleep(0.02)
        return "released"
    if "ask me" in text:
        question = {"question": "Which colour?", "header": "colour", "options": []}
        return ScriptedModel.tool_call("ask_user_question", {"questions": [question]})
    if text.startswith("wait for "):
        return ScriptedModel.tool_call("wait_for_file", {"path": text[len("wait for ") :]})
    if "deploy" in text:
        return ScriptedModel.tool_call("deploy", {"target": "prod"})
    if "slow" in text:
        await anyio.sleep(120)
    if "crash" in text:  # a bug's failure: not a library error, naming a file of the server
        raise OSError("cannot open /srv/agentscope/provider.key: permission denied")
    if "recall" in text:
        said = [m for m in request.messages if m.role == "user" and m.name != "tool"]
        return f"you said {len(said)} things"
    return f"echo: {text}"


async def deploy(target: str) -> str:
    """Deploy to ``target`` (asks for confirmation first).

    Args:
        target: Where to deploy.
    """
    return f"deployed to {target}"


async def wait_for_file(path: str) -> str:
    """Wait until the file ``path`` exists (the test opens the gate); ``path.waiting`` says the
    wait has begun.

    Args:
        path: The file to wait for.
    """
    await anyio.Path(path + ".waiting").write_text("")
    with anyio.fail_after(60):
        while not await anyio.Path(path).exists():  # noqa: ASYNC110 - another process opens it
            await anyio.sleep(0.02)
    return "opened"


class Verdict(BaseModel):
    verdict: str
    score: int


def judge(request: ModelRequest) -> ModelResponse:
    return ScriptedModel.final_result({"verdict": "approve", "score": 7})


async def main(url: str, port: int, tokens: Path) -> None:
    async with store_from_url(url) as store:
        tools = [make_tool(deploy, requires_confirmation=True), make_tool(wait_for_file)]
        agent = HarnessAgent(
            "lead", ScriptedModel(answer), "A helpful lead.", store=store, tools=tools
        )
        judge_agent = HarnessAgent("judge", ScriptedModel(judge), "Judges.", store=store)
        async with agent, judge_agent:
            exposed = [ExposedAgent(agent), ExposedAgent(judge_agent, output_type=Verdict)]
            inner = a2a_app(
                exposed, store, verifier=StaticTokens.from_file(tokens), private_push=True
            )
            app = Starlette(routes=[Mount("/a2a", inner)])
            config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
            await uvicorn.Server(config).serve()


def model() -> ScriptedModel:
    """The model above, for ``--model python:tests.a2a.agent_server:model``."""
    return ScriptedModel(answer)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], int(sys.argv[3]), Path(sys.argv[2]))
