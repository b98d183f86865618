"""Agent Teams on top of ``BaseStore``: teams, a task board with leases, and a mailbox.

Records: :mod:`.models` (keys: :mod:`agentscope_teams.keys`). Concurrency: :mod:`.board` (claims
and the open index), :mod:`.eligibility` (the claim rule), :mod:`.rules` (transitions),
:mod:`.mailbox` (inboxes and cursors). Agents: :mod:`.tools` (the LLM tools, returning
:mod:`.results`), :mod:`.extension` (``TeamLeadExtension`` / ``TeamMemberExtension``),
:mod:`.actor` (``TeamActor``: one participant acting in a team), :mod:`.runtime` (member loops and
leases), :mod:`.worker` (``agentscope-teams worker``) and :mod:`.directory` (how workers find teams).
"""

from __future__ import annotations

from ..errors import UnknownTaskError, UnknownTeamError
from .actor import TeamActor
from .board import TaskBoard
from .builder import MemberBuilder, member_session_id
from .client import LocalTeamClient
from .directory import TeamRuntimeRecord
from .extension import TeamLeadExtension, TeamMemberExtension
from .mailbox import Mailbox
from .models import (
    Member,
    MemberStatus,
    Task,
    TaskEvent,
    TaskStatus,
    Team,
    TeamKeys,
    TeamMessage,
    TeamStatus,
)
from .protocol import TeamClient
from .runtime import TeamRuntime
from .slot import TeamRef
from .summary import TeamWaitResult, wait_for_team
from .worker import Worker, WorkerConfig, run_worker

__all__ = [
    "LocalTeamClient",
    "Mailbox",
    "Member",
    "MemberBuilder",
    "MemberStatus",
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
