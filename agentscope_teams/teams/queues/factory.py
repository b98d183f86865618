"""Which queue a board runs on: picked by the board-queue family its store declares.

A store declares its family in :attr:`StoreCapabilities.board_queue
<agentscope_teams.store.capabilities.StoreCapabilities.board_queue>` (``"redis"``, ``"sql"``, or
None). Each family is a function ``(store, keys) -> BoardQueue | None`` registered under that name
(:func:`register_queue_family`; the built-in ones import their queue only when asked). A family
may still decline a store (SQLite has no native queue: ``"sql"`` returns None); every store then
gets the generic :class:`~.store.StoreQueue`, which is one more :class:`~.base.BoardQueue`, so the
board never asks which path it is on.

All processes serving a team must use the same queue (each finds work through its own index; both
read the records). ``AGENTSCOPE_TEAMS_BOARD_NATIVE=0`` (or ``TaskBoard(..., native=False)``) forces
the generic queue everywhere; :meth:`~..board.TaskBoard.rebuild_index` rebuilds the index of the
queue in use from the records (say, after switching).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ...message import utcnow
from ...store.base import BaseStore
from ...store.capabilities import capabilities_of
from ..rules.models import TeamKeys
from .base import BoardQueue, native_wanted
from .store import StoreQueue

QueueFamily = Callable[[BaseStore, TeamKeys], BoardQueue | None]


def redis_queue_of(store: BaseStore, keys: TeamKeys) -> BoardQueue | None:
    """The family ``"redis"``: a Redis store's native queue, where its server runs the scripts."""
    from ...store.redis import RedisStore
    from .redis import RedisBoardQueue, redis_queue_supported

    if isinstance(store, RedisStore) and redis_queue_supported(store):
        return RedisBoardQueue(store, keys)
    return None


def sql_queue_of(store: BaseStore, keys: TeamKeys) -> BoardQueue | None:
    """The family ``"sql"``: PostgreSQL and MySQL/MariaDB have a native queue; SQLite keeps the
    generic one."""
    from ...store.sql import SqlStore

    if not isinstance(store, SqlStore):
        return None
    if store.dialect == "postgresql":
        from .sql_pg import PostgresBoardQueue

        return PostgresBoardQueue(store, keys)
    if store.dialect == "mysql":
        from .sql_mysql import MysqlBoardQueue

        return MysqlBoardQueue(store, keys)
    return None


_FAMILIES: dict[str, QueueFamily] = {"redis": redis_queue_of, "sql": sql_queue_of}


def register_queue_family(name: str, family: QueueFamily) -> None:
    """Let stores declaring ``board_queue=name`` run their boards on queues ``family`` builds."""
    if not name or not callable(family):
        raise ValueError(f"a queue family needs a name and a callable, got {name!r}, {family!r}")
    _FAMILIES[name] = family


def family_of(store: BaseStore) -> str | None:
    """The board-queue family ``store`` declares (:func:`capabilities_of`)."""
    return capabilities_of(store).board_queue


def board_queue_of(
    store: BaseStore,
    keys: TeamKeys,
    clock: Callable[[], datetime] = utcnow,
    *,
    native: bool | None = None,
) -> BoardQueue:
    """The queue of the board of ``keys`` on ``store``: the native one of the store's family, or
    the generic :class:`StoreQueue` (always, with ``native=False``; see the module docs)."""
    name = family_of(store) if native_wanted(native) else None
    family = _FAMILIES.get(name) if name is not None else None
    queue = family(store, keys) if family is not None else None
    return queue if queue is not None else StoreQueue(store, keys, clock)
