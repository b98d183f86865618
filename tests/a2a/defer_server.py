"""A test A2A server process whose lead has a real PreToolUse command hook that answers what the
file ``FOLDER/decision`` says (defer / allow / deny) for ``write_file``, giving the reason
"policy: DECISION".

``python -m tests.a2a.defer_server STORE_URL TOKENS_FILE FOLDER PORT``. The model: "write TEXT"
writes TEXT to ``FOLDER/ws/a.txt``; the write's result is answered "wrote: RESULT"; any other text
is echoed as "echo: TEXT". The hook logs each call it saw to ``FOLDER/seen.jsonl``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount

from agentscope_teams import HarnessAgent
from agentscope_teams.a2a_server import ExposedAgent, StaticTokens, a2a_app
from agentscope_teams.message import ToolResultBlock
from agentscope_teams.model import ModelRequest, ModelResponse, ScriptedModel
from agentscope_teams.store.url import store_from_url

#: The hook: a real command reading the decision file next to it.
DECIDER = """\
import json, pathlib, sys
here = pathlib.Path(__file__).parent
d = json.load(sys.stdin)
with open(here / "seen.jsonl", "a") as f:
    f.write(json.dumps({"tool": d["tool_name"], "id": d["tool_use_id"]}) + "\\n")
if d["tool_name"] != "Write":
    sys.exit(0)
decision = (here / "decision").read_text().strip()
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse",
                  "permissionDecision": decision,
                  "permissionDecisionReason": "policy: " + decision}}))
"""


def hooks(folder: Path) -> dict[str, Any]:
    """Claude Code's hooks shape for the decider, written to ``folder/decide.py``."""
    path = folder / "decide.py"
    path.write_text(f"#!{sys.executable}\n{DECIDER}")
    path.chmod(0o755)
    command = {"type": "command", "command": str(path)}
    return {"PreToolUse": [{"matcher": "", "hooks": [command]}]}


def answer(request: ModelRequest) -> ModelResponse | str:
    last = request.messages[-1]
    results = [b for b in last.content if isinstance(b, ToolResultBlock)]
    if results:
        return f"wrote: {results[0].output}"
    text = last.get_text_content()
    if text.startswith("write "):
        return ScriptedModel.tool_call("write_file", {"path": "a.txt", "content": text[6:]})
    return f"echo: {text}"


def lead(folder: Path, store: Any) -> HarnessAgent:
    return HarnessAgent(
        "lead",
        ScriptedModel(answer),
        "A lead whose writes a hook decides.",
        store=store,
        workspace=folder / "ws",
        workspace_scope="shared",
        hooks=hooks(folder),
    )


async def main(url: str, tokens: Path, folder: Path, port: int) -> None:
    async with store_from_url(url) as store:
        agent = lead(folder, store)
        async with agent:
            inner = a2a_app([ExposedAgent(agent)], store, verifier=StaticTokens.from_file(tokens))
            app = Starlette(routes=[Mount("/a2a", inner)])
            config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
            await uvicorn.Server(config).serve()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))
