"""An A2A agent of another framework: a pydantic-ai agent served by fasta2a (``agent_to_a2a``),
its model a pydantic-ai ``FunctionModel`` (no LLM).

``python -m tests.a2a.pydantic_ai_server PORT``: answers "pydantic-ai heard: <the last user text>".
"""

from __future__ import annotations

import sys

import uvicorn
from fasta2a.pydantic_ai import agent_to_a2a
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel


def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    said = [
        part.content
        for message in messages
        for part in getattr(message, "parts", [])
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]
    return ModelResponse(parts=[TextPart(f"pydantic-ai heard: {said[-1] if said else ''}")])


if __name__ == "__main__":
    port = int(sys.argv[1])
    agent = Agent(FunctionModel(answer), name="pyd")
    app = agent_to_a2a(agent, url=f"http://127.0.0.1:{port}")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
