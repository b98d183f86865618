"""The scripted lead of the ``serve --mcp`` test (``--model python:tests.mcp.serve_model:model``):
"list your runs" calls the ``agent_list`` tool and answers "listed" once it returns; "recall"
counts the user messages of the conversation; "note X" writes X to notes.txt and "read the notes"
reads it (answering with the tool's output); "crash" fails as a bug would (an exception that is
not a library error, naming a file of the server); anything else is echoed."""

from __future__ import annotations

from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel


def answer(request: ModelRequest) -> ModelResponse | str:
    last = request.messages[-1]
    results = [b for b in last.content if isinstance(b, ToolResultBlock)]
    if results and results[0].name in ("read_file", "write_file"):
        return f"{results[0].name}: {results[0].output}"
    if results:
        return "listed"
    text = last.get_text_content()
    if text.startswith("note "):
        note = {"path": "notes.txt", "content": text[len("note ") :]}
        return ScriptedModel.tool_call("write_file", note)
    if text == "read the notes":
        return ScriptedModel.tool_call("read_file", {"path": "notes.txt"})
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
