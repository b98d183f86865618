"""What a store can do, declared in one place: :class:`StoreCapabilities` and :func:`capabilities_of`.

Callers ask :func:`capabilities_of` instead of probing a store's type or attributes. A backend
declares its capabilities with a ``capabilities`` attribute (or property, when they depend on how
the store was opened); a store written against the bare :class:`~.base.BaseStore` protocol gets the
conservative answer derived from the older per-flag attributes.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass


@dataclass(frozen=True)
class StoreCapabilities:
    """The optional capabilities of one store."""

    #: Cross-process wake-ups (``signal`` / ``wait_signal``); without them callers poll.
    signals: bool = False
    #: The native board-queue family this store offers (``"redis"``, ``"sql"``), or None: the
    #: board then runs on the generic queue over ``get``/``put``/``list_keys``.
    board_queue: str | None = None
    #: ``put``/``delete`` take ``fence=`` and ``indexed=`` (writes fenced by a lease record).
    fencing: bool = True
    #: ``delete`` takes ``fence=`` too (:class:`~.base.FencedDeletes`): a lease is given back
    #: only while it holds its holder's value. False for a store that does not declare it.
    fenced_delete: bool = False
    #: ``list_keys`` pages by prefix (every backend today).
    listing: bool = True
    #: Several OS processes may share the store (file, SQL, Redis; not memory).
    shared_across_processes: bool = True
    #: Several hosts may share the store (SQL servers, Redis; not files, not SQLite).
    shared_across_hosts: bool = False
    #: Named fields beside an entry's value, rewritten in part (:class:`~.base.FieldRecords`;
    #: Redis): session records keep their context in segments there.
    field_records: bool = False
    #: Entries and stream pages read together in one round trip (:class:`~.base.RoundReads`;
    #: a standalone Redis server: one pipeline; PostgreSQL: one statement).
    round_reads: bool = False
    #: Expired entries are removed on request, a bounded batch at a time
    #: (:class:`~.expiry.PurgesExpired`; SQL, the file store, memory): the backend does not free
    #: them itself (Redis does).
    purges_expired: bool = False


def capabilities_of(store: object) -> StoreCapabilities:
    """The capabilities ``store`` declares, or those derived from its older flags."""
    declared = getattr(store, "capabilities", None)
    if isinstance(declared, StoreCapabilities):
        return declared
    from .base import Signals

    return StoreCapabilities(
        signals=bool(getattr(store, "signals_enabled", True)) and isinstance(store, Signals),
        board_queue=None,
        fencing=takes_fence(store),
        fenced_delete=takes_fence(store, "delete"),
        listing=callable(getattr(store, "list_keys", None)),
        shared_across_processes=bool(getattr(store, "shared_across_processes", True)),
        shared_across_hosts=bool(getattr(store, "shared_across_hosts", False)),
        field_records=False,
        round_reads=False,
        purges_expired=False,
    )


_FENCE: dict[tuple[type, str], bool] = {}


def takes_fence(store: object, method: str = "put") -> bool:
    """Whether ``store.put`` (or ``store.<method>``) takes ``fence=`` (a store written against the
    first protocol may not). Cached per type."""
    kind = (type(store), method)
    found = _FENCE.get(kind)
    if found is None:
        fn = getattr(store, method, None)
        params = inspect.signature(fn).parameters.values() if callable(fn) else ()
        found = any(p.name == "fence" or p.kind is p.VAR_KEYWORD for p in params)
        _FENCE[kind] = found
    return found
