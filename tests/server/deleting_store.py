"""A store wrapper that deletes a team just before a chosen read: the DELETE-during-a-read race,
made deterministic (no timing involved)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from agentscope_teams import RuntimeContext
from agentscope_teams.keys import TeamKeys
from agentscope_teams.store import BaseStore
from agentscope_teams.store.base import Entry, Key, get_many
from agentscope_teams.teams import LocalTeamClient

#: Which read sets the deletion off: (operation, key or first key of a batch) -> whether it does.
Trigger = Callable[[str, Key], bool]


@dataclass
class _Armed:
    ctx: RuntimeContext
    team_id: str
    when: Trigger


class DeletingStore:
    """Forwards everything to ``inner``; once :meth:`arm` ed, the first ``get``, ``get_many``,
    ``list_keys`` or ``read`` that ``when`` matches first deletes the team (through ``inner``, as
    another request would), then runs. ``deletions`` counts the deletions made."""

    def __init__(self, inner: BaseStore) -> None:
        self.inner = inner
        self.deletions = 0
        self._armed: _Armed | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def arm(self, org: str | None, user: str, team_id: str, when: Trigger) -> None:
        ctx = RuntimeContext(session_id="race", user_id=user, org_id=org)
        self._armed = _Armed(ctx, team_id, when)

    async def _before(self, op: str, key: Key | None) -> None:
        armed = self._armed
        if armed is None or key is None or not armed.when(op, key):
            return
        self._armed = None
        await LocalTeamClient(self.inner, armed.ctx).delete_team(armed.team_id)
        self.deletions += 1

    async def get(self, key: Key) -> Entry | None:
        await self._before("get", key)
        return await self.inner.get(key)

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        await self._before("get_many", keys[0] if keys else None)
        return await get_many(self.inner, keys)

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]:
        await self._before("list_keys", prefix)
        return await self.inner.list_keys(prefix, limit=limit, after=after)

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]:
        await self._before("read", stream)
        return await self.inner.read(stream, after=after, limit=limit)


def team_keys(org: str | None, user: str, team_id: str) -> TeamKeys:
    """The keys of a team of (org, user), built the one allowed way."""
    ctx = RuntimeContext(session_id="race", user_id=user, org_id=org)
    return TeamKeys(ctx.owner_scope(), team_id)


def task_listing(keys: TeamKeys) -> Trigger:
    """Just before the board is listed: after the team record was read."""
    return lambda op, key: op == "list_keys" and key == keys.tasks_prefix()


def task_read(keys: TeamKeys, task_ids: Sequence[str]) -> Trigger:
    """Between listing the task keys and reading the tasks of ``task_ids`` (one or a batch)."""
    wanted = {keys.task(t) for t in task_ids}
    return lambda op, key: op in ("get", "get_many") and key in wanted


def inbox_read(keys: TeamKeys, member: str) -> Trigger:
    """Just before ``member``'s inbox is read: after the team (and the membership) was checked."""
    return lambda op, key: op == "read" and key == keys.inbox(member)
