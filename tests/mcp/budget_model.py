"""The lead of the budget tests of the published lead (``--model
python:tests.mcp.budget_model:model``): echoes each message, reporting :data:`CALL_TOKENS` tokens
per call, so a budget's figures are known in advance."""

from __future__ import annotations

from agentscope_teams.model import ModelRequest, ScriptedModel, Usage
from agentscope_teams.model.base import ModelResponse

CALL_TOKENS = 600


def answer(request: ModelRequest) -> ModelResponse:
    text = request.messages[-1].get_text_content()
    return ScriptedModel.text(f"echo: {text}", usage=Usage(input_tokens=500, output_tokens=100))


def model() -> ScriptedModel:
    return ScriptedModel(answer)
