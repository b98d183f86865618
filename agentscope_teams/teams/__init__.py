"""Agent Teams on top of ``BaseStore``: teams, a task board with leases, and a mailbox.

Layout and concurrency design: :mod:`.models` (keys), :mod:`.board` (claims and the open index),
:mod:`.mailbox` (inboxes and cursors).
"""

from __future__ import annotations

from ..errors import UnknownTaskError, UnknownTeamError
from .board import TaskBoard
from .client import LocalTeamClient
from .mailbox import Mailbox
from .member import TeamMember
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

__all__ = [
    "LocalTeamClient",
    "Mailbox",
    "Member",
    "MemberStatus",
    "Task",
    "TaskBoard",
    "TaskEvent",
    "TaskStatus",
    "Team",
    "TeamClient",
    "TeamKeys",
    "TeamMember",
    "TeamMessage",
    "TeamStatus",
    "UnknownTaskError",
    "UnknownTeamError",
]
