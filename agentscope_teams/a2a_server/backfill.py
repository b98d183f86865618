"""Give A2A task records written before waiting tasks had a TTL (schema version 1) the TTL of
their state, once.

A record of version 1 that has ended may have no TTL (written before task retention) and one that
waits for input has none: left alone, both stay forever. :func:`backfill_ttls` reads every A2A
task record and rewrites each of version 1 that has ended or waits, as version 2, with what its
state leaves it (:class:`~.lifetimes.Lifetimes`: counted from its status time), its push configs
too; one whose time has passed is deleted. Each rewrite is a compare-and-swap on the version read:
a record changed meanwhile was written by the new code and is left as it is. A record of version
2 is only read, so a second pass writes nothing. ``serve --a2a`` runs it once at start-up, in the
background.
"""

from __future__ import annotations

import contextlib
import logging
import time

from a2a.types.a2a_pb2 import Task

from ..errors import VersionConflict
from ..keys import a2a_every_task_prefix, a2a_push_prefix, a2a_task_of
from ..store.base import BaseStore, Key
from .lifetimes import ENDED, WAITING, Lifetimes, status_time
from .stores import SCHEMA_VERSION, StorePushConfigStore, decode_task, encode_task

log = logging.getLogger(__name__)

_PAGE = 500


async def backfill_ttls(store: BaseStore, lifetimes: Lifetimes) -> int:
    """Rewrite (or delete, when past its time) every A2A task record of an older schema that has
    ended or waits for input; how many were rewritten or deleted."""
    done, after = 0, None
    while keys := await store.list_keys(a2a_every_task_prefix(), limit=_PAGE, after=after):
        for key in keys:  # one by one: on a Redis Cluster each caller's tasks have a slot
            with contextlib.suppress(VersionConflict):  # written meanwhile, by this release
                done += await _backfill_one(store, key, lifetimes)
        after = keys[-1]
    if done:
        log.info("A2A: %d task records of an older release were given their TTL", done)
    return done


def _left(task: Task, lifetimes: Lifetimes, now: float) -> float | None:
    """Seconds the record of ``task`` has left at ``now``; None when its state has no TTL."""
    if task.status.state in ENDED:
        return lifetimes.left(task, now)
    if task.status.state in WAITING:
        since = status_time(task)
        start = now if since is None else since
        return start + lifetimes.input_timeout + lifetimes.retention - now
    return None


async def _backfill_one(store: BaseStore, key: Key, lifetimes: Lifetimes) -> int:
    where = a2a_task_of(key)
    entry = await store.get(key)
    if where is None or entry is None:
        return 0
    task, schema = decode_task(entry.value)
    left = _left(task, lifetimes, time.time())
    if schema >= SCHEMA_VERSION or left is None:
        return 0
    if left > 0:
        await store.put(key, encode_task(task), expected_version=entry.version, ttl=left)
        await StorePushConfigStore(store, where[0]).retain(where[1], left)
        return 1
    await store.delete(key, expected_version=entry.version)
    for config in await store.list_keys(a2a_push_prefix(*where)):  # they go with it
        await store.delete(config)
    return 1
