"""The member model of the deploy test's workers: the team tests' member script, with usage."""

from __future__ import annotations

from agentscope_teams.model.base import ModelRequest, ModelResponse, Usage
from agentscope_teams.model.scripted import ScriptedModel

from ..teams.scripts import member_script

USAGE = Usage(input_tokens=120, output_tokens=30)
#: A model name with a price in the price database (genai-prices).
PRICED = "gpt-4o-mini"


def member_model() -> ScriptedModel:
    """Each response reports :data:`USAGE` (so the token counters move), as a model the price
    database knows (so the cost counter moves too)."""

    def step(request: ModelRequest) -> ModelResponse:
        out = member_script(request)
        if isinstance(out, str):
            return ScriptedModel.text(out, usage=USAGE)
        return out.model_copy(update={"usage": USAGE})

    return ScriptedModel(step, name=PRICED)
