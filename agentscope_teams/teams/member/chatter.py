"""A member's idle chatter, compacted: its session does not grow with wake-ups that did nothing.

Every wake-up appends the runtime's prompt (a user message carrying the :data:`~.work.WAKE`
metadata) and the member's answer. When that answer is text only (no tool called) and the next
message of the session is the next wake-up's prompt, the exchange changed nothing on the board and
told the member nothing it is not told again: :func:`compact_idle` drops such exchanges, all but
the latest, before a call begins (:meth:`~.extension.TeamMemberExtension.prepare`). An exchange
with a tool call, an injected teammate message or a hook's prompt in it is kept whole.

The usage ledger's anchor (the last reported prompt size, :class:`~agentscope_teams.state.UsageLedger`)
is moved down by the messages dropped below it, so the next budget still estimates only the
messages after it (the anchored size is then an over-estimate: on the safe side).
"""

from __future__ import annotations

from itertools import pairwise

from ...message import Msg
from ...state import AgentState
from .work import WAKE


def _plain_answer(msg: Msg) -> bool:
    return msg.role == "assistant" and not msg.tool_uses()


def compact_idle(state: AgentState) -> int:
    """Drop the idle exchanges of ``state``'s context but the latest (see the module docs);
    returns how many messages were dropped."""
    context = state.context
    # one look at each message: a wake-up's prompt is a user message with the WAKE metadata
    wakes = [i for i, m in enumerate(context) if m.role == "user" and WAKE in m.metadata]
    idle = [i for i, j in pairwise(wakes) if j == i + 2 and _plain_answer(context[i + 1])]
    if not idle:
        return 0
    gone = {j for i in idle for j in (i, i + 1)}
    usage = state.usage
    if usage.anchor(context) and usage.prompt_messages - 1 not in gone:
        usage.prompt_messages -= sum(1 for j in gone if j < usage.prompt_messages)
    else:
        usage.forget_prompt()
    state.context = [m for j, m in enumerate(context) if j not in gone]
    return len(gone)
