"""TaskCompleted for a task failed by lease expiry: its owner died with every attempt used.

No member reports such a task: the board fails it when a process meets its lapsed lease, in a
claim (:meth:`~.board.TaskBoard.claim_next`, a named claim) or a sweep
(:meth:`~.board.TaskBoard.reap_expired`). Each of those is one conditional write, so one process
fails the task; but only the sweep returns what it settled (a native claim settles inside the
queue's script and says nothing). So a client with ``TaskCompleted`` hooks sweeps before it claims,
and judges the sweep and the claim at one instant (:func:`pinned`): every lease the claim finds
lapsed, the sweep found lapsed first and settled, or another process did. The process whose sweep
settled the task fires its hooks (:func:`report`): once, whichever processes race to it.

A process without ``TaskCompleted`` hooks (the control plane's HTTP routes, a client built without
hooks) settles such a task silently, as it completes and fails tasks without hooks.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol, TypeVar

from ..hooks import Hooks
from .rules.models import Task, TaskStatus


class SweepingClient(Protocol):
    """What this module needs of :class:`~.client.LocalTeamClient` (which imports it)."""

    clock: Callable[[], datetime]
    hooks: Hooks | None
    _boards: dict[str, Any]  # its boards by team (TaskBoard: a layer above this module)

    async def reap_expired(self, team_id: str) -> list[Task]: ...

    async def _task_hook(
        self, event: str, team_id: str, task: Task, member: str | None, status: str = ...
    ) -> object: ...


C = TypeVar("C", bound=SweepingClient)

#: The history action of :func:`~.rules.expired`.
LAPSED = "lease_expired"


def watched(hooks: Hooks | None) -> bool:
    """Whether ``hooks`` want to hear of task ends (a TaskCompleted hook is configured)."""
    return bool(hooks and hooks.by_event.get("TaskCompleted"))


def failed_by_expiry(tasks: Sequence[Task]) -> list[Task]:
    """The tasks of ``tasks`` (as a sweep returned them) that the sweep failed."""
    return [
        t
        for t in tasks
        if t.status is TaskStatus.FAILED and t.history and t.history[-1].action == LAPSED
    ]


async def report(client: SweepingClient, team_id: str, settled: Sequence[Task]) -> None:
    """Fire TaskCompleted (``status: failed``, the dead owner as ``teammate_name``) for each task
    this process's sweep failed."""
    for task in failed_by_expiry(settled):
        await client._task_hook("TaskCompleted", team_id, task, task.owner, str(task.status))


async def pinned(client: C, team_id: str) -> C:
    """Sweep ``team_id``'s lapsed leases now (reporting the failures), and return a view of
    ``client`` whose clock stays at that instant, for the claim that follows (module docs)."""
    now = client.clock()
    view = copy.copy(client)  # shares the store and the known team records
    view.clock, view.hooks = (lambda: now), None
    view._boards = {}  # not the client's: a board keeps the clock it was built with
    await report(client, team_id, await view.reap_expired(team_id))
    return view
