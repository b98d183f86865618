"""The scripted lead of the ``serve --mcp`` test (``--model python:tests.mcp.serve_model:model``):
"list your runs" calls the ``agent_list`` tool and answers "listed" once it returns; "recall"
counts the user messages of the conversation; "crash" fails as a bug would (an exception that is
not a library error, naming a file of the server); anything else is echoed."""

from __future__ import annotations

from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel


def answer(request: ModelRequest) -> ModelResponse | str:
    last = request.messages[-1]
    if any(isinstance(b, ToolResultBlock) for b in last.content):
        return "listed"
    text = last.get_text_content()
    if "list your runs" in text:
        return ScriptedModel.tool_call("agent_list", {})
    if "crash" in text:
        raise OSError("cannot open /srv/agentscope/provider.key: permission denied")
    if "recall" in text:
        said = [m for m in request.messages if m.role == "user" and m.name != "tool"]
        return f"you said {len(said)} things"
    return f"echo: {text}"


def model() -> ScriptedModel:
    return ScriptedModel(answer)
