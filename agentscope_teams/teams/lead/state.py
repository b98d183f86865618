"""``TeamLeadState``: what a lead's session remembers about its teams (saved in its state)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, SerializerFunctionWrapHandler, model_serializer

from ...state import ExtensionState

LEGACY_KEY = "team_id"  # before schema 1 the current team id was stored under this key


class TeamLeadState(ExtensionState):
    """The lead's current team (the default ``team_id`` of its tools), or None; and the teams it
    led that ended since its last step, whose messages it has not read yet (read once, by the next
    step, as late messages of an ended team: see ``docs/teams.md``)."""

    KEY = "teams"
    SCHEMA_VERSION = 1
    LEGACY_KEYS = (LEGACY_KEY,)

    team_id: str | None = None
    ended_teams: list[str] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _without_empty_ended(self, handler: SerializerFunctionWrapHandler) -> Any:
        """``ended_teams`` only when it holds a team: a lead's state is as small as before, and a
        process of the previous release still reads it."""
        data = handler(self)
        if isinstance(data, dict) and not data.get("ended_teams"):
            data.pop("ended_teams", None)
        return data

    @classmethod
    def upgrade(cls, middle: dict[str, Any]) -> Any:
        if cls.KEY not in middle and isinstance(middle.get(LEGACY_KEY), str):
            return {"team_id": middle[LEGACY_KEY]}
        return middle.get(cls.KEY)
