"""The lead's tools, bound to one call of the lead (schemas: :mod:`..rules.schemas`; what each
does: :mod:`.tool_calls`). The member tools are :mod:`..member.tools`; their names are importable
from here too, as from ``agentscope_teams.teams.tools`` before the split."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...agent.extension import CallScope
from ...tools import Tool
from ..member.tools import MemberToolCalls, bind_templates, guarded, member_tools
from ..rules.schemas import LEAD_TEMPLATES
from .tool_calls import LeadToolCalls

if TYPE_CHECKING:
    from .extension import TeamLeadExtension

__all__ = ["MemberToolCalls", "guarded", "lead_tools", "member_tools"]


def lead_tools(ext: TeamLeadExtension, scope: CallScope) -> list[Tool]:
    """The lead's ten tools, bound to one call of the lead."""
    calls = LeadToolCalls(ext, scope)
    return bind_templates(
        LEAD_TEMPLATES,
        {
            "createTeam": calls.create,
            "spawnMember": calls.spawn,
            "approvePlan": calls.approve_plan,
            "assignTask": calls.assign,
            "waitForTeam": calls.wait,
            "listTasks": calls.list,
            "sendMessage": calls.send,
            "broadcastMessage": calls.broadcast,
            "deleteTeam": calls.delete,
            "endTeam": calls.end,
        },
    )
