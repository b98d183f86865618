"""The rules of the task board, pure functions and records that touch no store.

:mod:`.models` (the persisted records), :mod:`.limits` (the bounds of every input),
:mod:`.eligibility` (who may claim a task: the claim rule), :mod:`.transitions` (the record each
transition writes) and :mod:`.schemas` (the team tools as the model sees them).

Before the split this path was the module now at :mod:`.transitions`: its names are still served
here, with a :class:`DeprecationWarning`.
"""

from __future__ import annotations

#: The names of the old module ``agentscope_teams.teams.rules`` (now :mod:`.transitions`).
_TRANSITIONS = frozenset(
    {
        "BOARD",
        "Change",
        "cancel",
        "check_result",
        "claimed",
        "created",
        "expired",
        "finish",
        "finish_detail",
        "release",
        "renew_lease",
        "renewed",
        "require_owner",
        "required_data",
        "schema_refused",
    }
)


def __getattr__(name: str) -> object:
    if name not in _TRANSITIONS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .. import _moved
    from . import transitions

    _moved.warn_moved(f"{__name__}.{name}", f"{transitions.__name__}.{name}")
    return getattr(transitions, name)
