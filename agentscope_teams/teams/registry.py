"""Team records of one (org, user): load, update with a conditional write, list, check membership."""

from __future__ import annotations

from collections.abc import Callable

from ..context import validate_identifier
from ..errors import (
    TeamError,
    UnknownMemberError,
    UnknownTeamError,
    VersionConflict,
)
from ..keys import REGISTRY_SEGMENT, TeamKeys, team_id_of, team_index_prefix
from ..listing import UNREADABLE, Listing, Unreadable, unreadable
from ..store.base import BaseStore, Entry, Key
from .rules.models import Member, Team, TeamStatus

TeamChange = Callable[[Team], Team | None]


def _decoded(entry: Entry | None) -> tuple[Team, int] | None:
    return None if entry is None else (Team.model_validate_json(entry.value), entry.version)


class TeamRegistry:
    """The teams visible in one owner scope (typed org and user segments)."""

    def __init__(self, store: BaseStore, scope: tuple[str, str]) -> None:
        self.store, self.scope = store, scope

    def _keys(self, team_id: str) -> TeamKeys:
        validate_identifier(team_id, "team_id")
        if team_id == REGISTRY_SEGMENT:
            raise UnknownTeamError(f"no team {team_id!r}: that name is reserved")
        return TeamKeys(self.scope, team_id)

    def _registry(self, team_id: str) -> Key:
        return self._keys(team_id).index()

    async def _load(self, team_id: str) -> tuple[Team, int] | None:
        return _decoded(await self.store.get(self._keys(team_id).team()))

    async def _team(self, team_id: str, *, allow_deleted: bool = False) -> Team:
        return (await self._team_entry(team_id, allow_deleted=allow_deleted))[0]

    async def _team_entry(self, team_id: str, *, allow_deleted: bool = False) -> tuple[Team, int]:
        return self._checked(team_id, await self._load(team_id), allow_deleted=allow_deleted)

    def _checked(
        self, team_id: str, found: tuple[Team, int] | None, *, allow_deleted: bool = False
    ) -> tuple[Team, int]:
        """The team record read, or the error of a team that is not there (or was deleted)."""
        if found is None:
            raise UnknownTeamError(
                f"no team {team_id!r} is visible to this user; list_teams() shows the teams you own"
            )
        if found[0].status is TeamStatus.DELETED and not allow_deleted:
            raise UnknownTeamError(f"team {team_id!r} was deleted")
        return found

    async def _update_team(
        self,
        team_id: str,
        change: TeamChange,
        *,
        allow_deleted: bool = False,
        known: tuple[Team, int] | None = None,
    ) -> Team:
        """Read-modify-write the team record until the conditional write wins. With ``known``
        (the record and version as read lately) the first write goes without a read; if that
        record was stale, or the change has nothing to write or refuses it there, the record is
        read and the change applied to it as without ``known``."""
        while True:
            if known is not None:
                (team, version), known = known, None
                try:
                    new = change(team)
                except TeamError:
                    continue  # judged on the stored record, not on the one remembered
                if new is None:
                    continue
            else:
                team, version = await self._team_entry(team_id, allow_deleted=allow_deleted)
                new = change(team)
                if new is None:
                    return team
            try:
                written = await self.store.put(
                    self._keys(team_id).team(),
                    new.model_dump_json().encode(),
                    expected_version=version,
                )
            except VersionConflict:
                continue
            self._wrote(team_id, new, written)
            return new

    def _wrote(self, team_id: str, team: Team, version: int) -> None:
        """The team record as this registry just wrote it (a client keeps it for guarded calls)."""

    async def team_entry(self, team_id: str) -> tuple[Team, int]:
        """The team record (as :meth:`get_team`) and its version, read now."""
        return await self._team_entry(team_id)

    def team_key(self, team_id: str) -> Key:
        """The store key of ``team_id``'s record, for a reader that reads it beside other keys
        (the runtime's step, with the inbox cursors) and decodes it with :meth:`team_entry_of`."""
        return self._keys(team_id).team()

    def team_entry_of(
        self, team_id: str, entry: Entry | None, last: tuple[bytes, Team] | None = None
    ) -> tuple[Team, int]:
        """The team record and version of ``entry``, read at :meth:`team_key` (raises as
        :meth:`team_entry` does when the team is not there or was deleted). ``last``: a record
        decoded before and the bytes it was decoded from, taken as it is when ``entry`` holds
        the same bytes (records are never changed in place: a change writes a copy)."""
        if entry is not None and last is not None and last[0] == entry.value:
            return self._checked(team_id, (last[1], entry.version))
        return self._checked(team_id, _decoded(entry))

    def remember_team(self, team_id: str, team: Team, version: int) -> None:
        """Take ``team`` at ``version`` as read just now by another reader of this store (the
        runtime's step), so a status write or a guarded claim need not read it again."""
        self._wrote(team_id, team, version)

    @staticmethod
    def _require(team: Team, name: str) -> None:
        """Raise :class:`UnknownMemberError` unless ``name`` is the lead or a member."""
        if name not in team.participants():
            others = ", ".join(repr(m.name) for m in team.members) or "no other members"
            raise UnknownMemberError(
                f"{name!r} is not a member of team {team.id!r}; its members are "
                f"{team.lead!r} (lead), {others}"
            )

    @classmethod
    def _require_member(cls, team: Team, name: str) -> Member:
        cls._require(team, name)
        member = team.member(name)
        if member is None:
            raise TeamError(f"{name!r} is the lead of team {team.id!r}, not a spawned member")
        return member

    async def get_team(self, team_id: str) -> Team:
        return await self._team(team_id)

    async def is_deleted(self, team_id: str) -> bool:
        """Whether ``team_id`` is deleted (or being deleted) now, read afresh.

        A delete marks the team deleted before it removes anything, so a read of the board or the
        inboxes that met a removal is followed by this read seeing the mark. False when the read
        fails for another reason: the caller then reports its own error.
        """
        try:
            await self._team(team_id)
        except UnknownTeamError:
            return True
        except Exception:  # the store failed too: not a sign of a deletion
            return False
        return False

    async def list_teams(self) -> Listing[Team]:
        """Every live team of this (org, user), oldest first.

        A team record that cannot be decoded is left out, logged and named in the result's
        ``problems``; :meth:`get_team` of it raises.
        """
        teams: list[Team] = []
        problems: list[Unreadable] = []
        after: Key | None = None
        while page := await self.store.list_keys(
            team_index_prefix(self.scope), limit=500, after=after
        ):
            for key in page:
                team_id = team_id_of(key)
                try:
                    found = await self._load(team_id)
                except UNREADABLE as exc:
                    problems.append(unreadable("team", team_id, self._keys(team_id).team(), exc))
                    continue
                if found is not None and found[0].status is not TeamStatus.DELETED:
                    teams.append(found[0])
            after = page[-1]
        return Listing(sorted(teams, key=lambda t: t.created_at), problems)
