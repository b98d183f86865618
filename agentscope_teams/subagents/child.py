"""Building a child: a :class:`SessionAgent` one level deeper, sharing the parent's store.

The child is named after its spec and keeps its conversation in the same store as the parent, in the
session whose id :func:`~.runs.child_session_id` derives; that id is used both to run and to persist it.
Its tools are the parent's own tools (``spec.tools`` picks a subset; ``None`` inherits all of them; the
spawn tools come only from the child's own :class:`SubagentExtension`, which the parent's extension
adds below ``max_depth``).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING

from ..agent.deferral import STOP_REASON, TOOL_DEFERRED
from ..agent.extension import AgentView, CallScope, Extension, ReadMark
from ..agent.harness import SessionAgent
from ..agent.react import TURN_LIMIT
from ..context import RuntimeContext
from ..errors import ChildPausedError, VersionConflict
from ..message import Msg
from ..model.base import ChatModel
from ..sessions import SessionConfig, SessionSource
from ..state import AgentState, PermissionMode
from ..trust import ProjectTrust
from .inbox import Inbox, acknowledge, take
from .spawn import spawn_agent
from .spec import SubagentSpec

if TYPE_CHECKING:
    from ..mcp import McpToolset


class MailExtension(Extension):
    """Injects the messages queued for a running child (``agent_send``) before its next step."""

    def __init__(self, mail: Inbox, sender: str) -> None:
        self.mail, self.sender = mail, sender

    async def inject(self, scope: CallScope) -> list[Msg]:
        notices = await take(self.mail, scope.local(self, ReadMark), scope.state)
        return [n.message(self.sender) for n in notices]

    async def after_save(self, scope: CallScope) -> None:
        await acknowledge(self.mail, scope.local(self, ReadMark))

    def works_after_save(self, scope: CallScope) -> bool:
        """Only when this call read mail it has not acknowledged yet."""
        return scope.local(self, ReadMark).to_acknowledge() is not None


def build_child(
    parent: AgentView,
    spec: SubagentSpec,
    *,
    model: ChatModel,
    workspace: Path,
    mail: Inbox,
    lease_ttl: float,
    mcp: McpToolset | None = None,
    trust: ProjectTrust | None = None,
    parent_mode: PermissionMode | None = None,
) -> SessionAgent:
    """The child agent of one run, one level below ``parent``, reading its ``agent_send`` mail;
    ``trust`` decides what its spec file may grant beyond the parent's permissions.
    ``parent_mode`` is the mode the parent's session is in (default: its engine's): the child
    inherits that one, as a Claude Code subagent inherits the main conversation's mode (an
    agent configured for ``plan`` whose plan was approved delegates in ``default``)."""
    permissions = parent.permissions
    if parent_mode is not None:
        permissions = permissions.in_mode(parent_mode)
    return spawn_agent(
        spec,
        name=spec.name,
        model=model,
        store=parent.store,
        toolkit=parent.toolkit,
        config=parent.config,
        permissions=permissions,
        workspace=workspace,
        extensions=[MailExtension(mail, parent.name)],
        lease_ttl=lease_ttl,
        busy_timeout=parent.busy_timeout,
        session_source=SessionSource.SUBAGENT,
        depth=parent.depth + 1,
        mcp=mcp,
        trust=trust,
    )


def fork_snapshot(state: AgentState) -> AgentState:
    """A copy of the parent's context for a ``context: fork`` child, without the trailing turn
    whose tool calls (the spawn itself) have no results yet."""
    context = [m.model_copy(deep=True) for m in state.context]
    while context and context[-1].role == "assistant" and context[-1].tool_uses():
        context.pop()
    return AgentState(summary=state.summary, context=context)


async def seed_session(child: SessionAgent, ctx: RuntimeContext, snapshot: AgentState) -> None:
    """Start the child's session from ``snapshot`` unless the session exists (a continued label)."""
    state = snapshot.model_copy(update={"session_id": ctx.session_id})
    with contextlib.suppress(VersionConflict):  # it exists: a continued label keeps its history
        await child.sessions.upsert_session(
            user_id=ctx.user_id,
            agent_id=child.name,
            state=state,
            session_id=ctx.session_id,
            config=SessionConfig(model=child.model_name),
            source=SessionSource.SUBAGENT,
            org_id=ctx.org_id,
            expected_version=0,
        )


def answer_of(msg: Msg, turn_limit: int | None = None) -> str:
    """The child's final answer; a pause for confirmation is an error (no user to confirm).
    ``turn_limit`` is the run's, named when the answer came at the limit (default: the call's)."""
    waiting = msg.metadata.get("awaiting_confirmation")
    if waiting:
        raise ChildPausedError(
            f"the subagent stopped to ask for confirmation ({msg.get_text_content()}); a subagent "
            "cannot ask the user: allow those tools with a permission rule of the parent agent"
        )
    if msg.metadata.get(STOP_REASON) == TOOL_DEFERRED:
        raise ChildPausedError(
            f"the subagent stopped: a PreToolUse hook deferred its tool call ({msg.get_text_content()})"
            "; nobody resumes a subagent's reply: let the hook allow or deny the calls of "
            "subagents (their hook input has agent_id)"
        )
    limit = msg.metadata.get(TURN_LIMIT)
    if limit:
        limit = turn_limit or limit
        return (
            f"[the subagent stopped at its turn limit ({limit} turns, maxTurns/steps) before it "
            f"finished]\n{msg.get_text_content()}"
        )
    return msg.get_text_content()
