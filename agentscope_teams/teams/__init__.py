"""Agent Teams on top of ``BaseStore``: teams, a task board with leases, and a mailbox.

Records: :mod:`.rules.models` (keys: :mod:`agentscope_teams.keys`). Concurrency: :mod:`.board` (claims
and the open index), :mod:`.rules.eligibility` (the claim rule), :mod:`.rules.transitions` (transitions),
:mod:`.mailbox` (inboxes and cursors). Agents: :mod:`.lead.tools` (the LLM tools, returning
:mod:`.results`), :mod:`.lead.extension` (``TeamLeadExtension`` / ``TeamMemberExtension``),
:mod:`.actor` (``TeamActor``: one participant acting in a team), :mod:`.member.runtime` (member loops and
leases), :mod:`.member.worker` (``agentscope-teams worker``) and :mod:`.directory` (how workers find teams).
"""

from __future__ import annotations

from ..errors import UnknownTaskError, UnknownTeamError
from . import _moved
from .actor import TeamActor
from .board import TaskBoard
from .client import LocalTeamClient
from .directory import TeamRuntimeRecord
from .lead.extension import TeamLeadExtension
from .mailbox import Mailbox
from .member.builder import MemberBuilder, member_session_id
from .member.extension import TeamMemberExtension
from .member.runtime import TeamRuntime
from .member.slot import TeamRef
from .member.worker import Worker, WorkerConfig, run_worker
from .protocol import TeamClient
from .rules.models import (
    Member,
    MemberStatus,
    MemberStop,
    Task,
    TaskEvent,
    TaskStatus,
    Team,
    TeamKeys,
    TeamMessage,
    TeamStatus,
)
from .summary import TeamWaitResult, wait_for_team

_moved.install()  # the old module paths (before the split) import with a DeprecationWarning

__all__ = [
    "LocalTeamClient",
    "Mailbox",
    "Member",
    "MemberBuilder",
    "MemberStatus",
    "MemberStop",
    "Task",
    "TaskBoard",
    "TaskEvent",
    "TaskStatus",
    "Team",
    "TeamClient",
    "TeamKeys",
    "TeamLeadExtension",
    "TeamActor",
    "TeamMemberExtension",
    "TeamMessage",
    "TeamRef",
    "TeamRuntime",
    "TeamRuntimeRecord",
    "TeamStatus",
    "TeamWaitResult",
    "UnknownTaskError",
    "UnknownTeamError",
    "Worker",
    "WorkerConfig",
    "member_session_id",
    "run_worker",
    "wait_for_team",
]


def __getattr__(name: str) -> object:
    if name == "TeamMember":  # renamed: too close to Member and TeamMemberExtension
        import warnings

        warnings.warn("TeamMember is renamed TeamActor", DeprecationWarning, stacklevel=2)
        return TeamActor
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
