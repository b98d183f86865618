"""The verifier of ``type: agent`` hooks: a read-only ReAct loop that answers ``{"ok", "reason"}``.

Claude Code runs an agent hook as a subagent that may read the project (Read, Grep, Glob) before
it decides. Here it is a :class:`~.react.ReActAgent` with the read-only file tools
(``read_file``, ``list_files``, ``glob_files``, ``grep_files``) in the workspace of the agent whose
event it judges, under that agent's permission rules (its ``Read`` deny rules hold), with no hooks
of its own (a hook cannot fire itself) and at most :data:`MAX_TURNS` model calls. It is not a
subagent run: nothing is recorded, and the hook's timeout bounds it.
"""

from __future__ import annotations

from pathlib import Path

from ..hooks.prompt import AgentRunner
from ..message import UserMsg
from ..model.base import ChatModel
from ..state import AgentState
from ..tools import ToolEnv, Toolkit
from ..tools.filesystem import filesystem_tools
from ..tools.permissions import PermissionEngine
from .config import ReActConfig

__all__ = ["MAX_TURNS", "hook_verifier"]

MAX_TURNS = 50
"""Model calls a verifier may make (Claude Code's bound on an agent hook's turns)."""

_NOTE = (
    "\n\nYou may read the project with the file tools (read-only) before you decide. Your final "
    "answer must be only the JSON object."
)


def hook_verifier(
    env: ToolEnv | None, workspace: Path, permissions: PermissionEngine | None = None
) -> AgentRunner:
    """The :data:`~agentscope_teams.hooks.prompt.AgentRunner` of an agent's events: verifiers
    that read ``env``'s workspace (else ``workspace``) under ``permissions``."""
    tool_env = env if env is not None else ToolEnv(workspace)

    async def run(system: str, prompt: str, model: ChatModel) -> str:
        from .react import ReActAgent, ReplyOptions  # react imports acting, which imports this

        tools = Toolkit([t for t in filesystem_tools() if t.read_only])
        config = ReActConfig(max_iters=MAX_TURNS)
        agent = ReActAgent("hook-verifier", model, system + _NOTE, tools, config, permissions)
        state = AgentState(session_id="hook-verifier")
        reply = await agent.reply(UserMsg(prompt), state, ReplyOptions(env=tool_env))
        return reply.get_text_content()

    return run
