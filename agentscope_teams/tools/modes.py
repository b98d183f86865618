"""Which permission mode an agent gets from the agent that spawns it: one table, one function.

:data:`MODE_REACH` orders the modes by how far each lets an agent act without asking (``plan``
least, ``bypass`` most; ``dont_ask`` refuses what ``default`` would ask, so it sits between
``plan`` and ``default``). :func:`child_mode` decides the mode of a spawned agent from its
parent's mode, the mode asked for, and who asked (:data:`Granter`):

* ``"operator"``: a spec built in code, or a spec file of a project the operator trusts. It may
  set any mode.
* ``"model"``: a mode a model chose at spawn time (the lead's ``spawnMember`` ``permission_mode``).
  It may raise the child up to ``acceptEdits`` (how a member with nobody to ask writes files at
  all), never to ``bypassPermissions`` unless the parent is in it itself: a prompt-injected lead
  cannot spawn a member that runs every command unasked.
* ``"untrusted"``: a spec file of a project the operator has not trusted. It may not raise the
  child above its parent's mode at all (:mod:`agentscope_teams.subagents.grants` records what it
  withholds); a mode that reaches less far still applies.

Parent precedence, as Claude Code documents it for a subagent's ``permissionMode``: a parent in
``bypassPermissions`` or ``acceptEdits`` takes precedence over the spec's mode, so a spec saying
``default`` under an ``acceptEdits`` parent runs in ``acceptEdits`` and one saying ``default`` or
``acceptEdits`` under a ``bypassPermissions`` parent runs in ``bypassPermissions`` (the user who
turned prompts off is not asked again by a child). Where we do better than Claude Code: a spec's
``plan`` or ``dontAsk`` still applies under such a parent. Those modes never ask, they only refuse
(``plan`` everything that changes files or state, ``dontAsk`` whatever is not allowed by a rule),
so keeping them prompts nobody, while overriding them would turn a read-only reviewer into an
agent that writes or runs anything unasked. Precedence applies to a spec's ``permissionMode``
only; a mode the parent itself chooses at spawn time (``spawnMember``'s ``permission_mode``,
``plan_approval``) is the parent's own decision and applies as given.

The parent's mode is the one its session is in (:meth:`~.permissions.PermissionEngine.effective_mode`),
not the one it was configured with: a subagent gets it when it is built, a team member from its
record (``Member.lead_mode``, written at spawn, since a worker building it never sees the lead's
session). A parent in plan mode spawns only children whose mode here is ``plan``, subagents and
team members alike (:func:`agentscope_teams.subagents.child_setup.check_plan_spawn`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ..state import PermissionMode
from .permissions import CLAUDE_MODES

__all__ = ["MODE_REACH", "Granter", "ModeGrant", "child_mode", "claude_name"]

#: How far each mode lets an agent act without asking, least first.
MODE_REACH: Mapping[PermissionMode, int] = {
    "plan": 0,
    "dont_ask": 1,
    "default": 2,
    "accept_edits": 3,
    "bypass": 4,
}

#: Who asks for a child's mode (module docstring).
Granter = Literal["operator", "model", "untrusted"]

#: The furthest-reaching mode each granter may give a child above its parent's mode.
_CAP: Mapping[Granter, PermissionMode] = {
    "operator": "bypass",
    "model": "accept_edits",
    "untrusted": "plan",
}

#: Parent modes that take precedence over a spec's mode that would ask more.
_PRECEDENT: frozenset[PermissionMode] = frozenset({"bypass", "accept_edits"})
#: Modes that never ask, only refuse: a spec's choice of them stands under any parent.
_REFUSING: frozenset[PermissionMode] = frozenset({"plan", "dont_ask"})

_CLAUDE_NAMES: Mapping[str, str] = {ours: theirs for theirs, ours in CLAUDE_MODES.items()}


def claude_name(mode: str) -> str:
    """Claude Code's name of one of our modes (``accept_edits`` -> ``acceptEdits``); any other
    name as it is."""
    return _CLAUDE_NAMES.get(mode, mode)


@dataclass(frozen=True)
class ModeGrant:
    """The child's ``mode``, and ``refused``: the mode asked for that the granter may not give
    (None when it was given, or nothing was asked)."""

    mode: PermissionMode
    refused: PermissionMode | None = None

    def refusal(self, parent: PermissionMode) -> str | None:
        """Why a mode a model asked for was refused (only ``bypass`` is, :data:`_CAP`), as a
        tool error the model reads."""
        if self.refused is None:
            return None
        return (
            f"permission_mode {claude_name(self.refused)!r} would let the member run every "
            f"command unasked, which you may not (your mode is {claude_name(parent)!r}); use "
            "acceptEdits for a member that writes files, or leave it out"
        )


def child_mode(
    parent: PermissionMode,
    asked: PermissionMode | None,
    granter: Granter,
    *,
    precedence: bool = True,
) -> ModeGrant:
    """The mode of a child spawned by an agent in ``parent`` mode that is ``asked`` (None: the
    parent's) by ``granter``. With ``precedence`` (a spec's ``permissionMode``), a parent in
    ``bypass`` or ``accept_edits`` takes precedence over an asked mode that would ask more; a
    mode chosen by the parent itself is given ``precedence=False``. See the module docstring."""
    if asked is None:
        return ModeGrant(parent)
    if MODE_REACH[asked] <= MODE_REACH[parent]:  # it reaches no further: the parent's to lower
        overridden = precedence and parent in _PRECEDENT and asked not in _REFUSING
        return ModeGrant(parent if overridden else asked)
    if MODE_REACH[asked] <= MODE_REACH[_CAP[granter]]:
        return ModeGrant(asked)
    return ModeGrant(parent, refused=asked)
