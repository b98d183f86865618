"""The narrow waist: :class:`BaseStore`, the only interface a storage backend implements.

Semantics every backend guarantees (checked by ``tests/store``, one conformance suite):

* A :data:`Key` is a non-empty tuple of non-empty string segments without NUL. Segments may hold any
  other character (``:``, ``/``, ``..``, ``{}``, ``*``); :func:`encode_key` escapes them so that two
  different keys never share an encoding and no key can escape a directory.
* ``put(expected_version=None)`` writes unconditionally; ``0`` creates only if absent; ``n > 0`` writes
  only if the current version is ``n``. A failed condition raises :class:`VersionConflict` and writes
  nothing. Versions start at 1 and grow by 1 per write. A deleted or expired key is absent: it can be
  created again with ``expected_version=0`` and restarts at version 1.
* ``ttl`` (seconds) makes the entry expire; an expired entry is absent for every operation.
* ``list_keys(prefix)`` returns the keys that extend ``prefix`` segment-wise, in the byte order of their
  encodings, at most ``limit`` of them, strictly after ``after`` when given (cursor paging).
* Streams are a separate namespace from keys. ``append`` allocates a sequence number in the store,
  strictly increasing per stream and unique across processes; ``read`` returns ``(seq, value)`` pairs with
  ``seq > after`` in order.
* Values larger than ``max_value_bytes`` raise :class:`ValueTooLargeError` before anything is written.
* ``indexed=False`` (``put`` / ``delete``) marks a key that is never listed (leases): a backend may
  skip its listing index for it (Redis does), so such a key may be missing from ``list_keys``. A key
  is written and deleted with the same flag every time. Backends without an index ignore it.
  An unindexed ``delete`` (a lease given back) does not wait behind an exhausted connection pool:
  the SQL store runs it on a connection of its own, Redis on a reserved turn of its gate.
* ``put(fence=Fence(k, v))`` writes only if key ``k`` (another key) currently holds exactly the value
  ``v``, checked atomically with the write and its version condition; otherwise it raises
  :class:`~agentscope_teams.errors.LeaseLostError` (a :class:`VersionConflict`) and writes nothing.
  ``Fence(..., release=True)`` also deletes ``k`` in the same operation when the write succeeds.
  This is how a lease holder's save is fenced without a separate read. ``k`` may be the written key
  itself (without ``release``): the write then happens only while the key still holds ``v``, so
  a compare of the version alone cannot be fooled by a key deleted and created again at the same
  version by someone else (a lease's renewal, :mod:`agentscope_teams.agent.lease`).
* ``delete(fence=Fence(k, v))`` (optional capability, :class:`FencedDeletes`, found with
  :func:`fenced_deletes_of`; every backend here has it) deletes only if ``k`` (the deleted key
  itself, or another) holds exactly ``v``, atomically with the delete and its version condition;
  otherwise :class:`~agentscope_teams.errors.LeaseLostError` and nothing is deleted. A delete's fence
  cannot ``release``. A lease is given back this way: by its holder's value *and* version, so a
  lease another holder created again at the same version is never deleted by the previous one.
* ``get_many(keys)`` (optional; :func:`get_many` calls it when a store has it, else loops ``get``)
  returns what ``get`` would for each key, in order, in one round trip where the backend allows it
  (a Redis pipeline, one ``SELECT ... IN`` per chunk on SQL). Callers pass keys of one group
  (:func:`agentscope_teams.keys.group_of`): on Redis Cluster one call must stay in one hash slot.
* Capabilities: what a store can do beyond this interface is declared in one place, its
  ``capabilities`` (:class:`~.capabilities.StoreCapabilities`), read with
  :func:`~.capabilities.capabilities_of`; :func:`signals_of`, :func:`takes_write_options`,
  :func:`shared_across_processes` and :func:`shared_across_hosts` are thin wrappers of it.
* Signals (optional capability, :class:`Signals`, found with :func:`signals_of`): ``signal(channel)``
  wakes every task currently in ``wait_signal`` on that channel, in any process sharing the store;
  ``wait_signal(channels, timeout)`` returns True when one of ``channels`` was signalled, False at the
  timeout. Delivery is best effort (a signal sent while nobody waits is lost, a subscriber that
  reconnects may miss some): callers keep a poll as the fallback. Channels are keys
  (``team-signal``, ``teams-signal``) but never entries. The in-memory store, Redis (pub/sub) and
  PostgreSQL (``LISTEN/NOTIFY``, :mod:`.sql.signals`) have them; MariaDB/MySQL, SQLite and the file
  store do not, and their callers poll (the member runtime every ``poll``, workers' directory scans
  on a backoff).
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, Self, cast, runtime_checkable

from ..errors import ValueTooLargeError
from . import closing
from .capabilities import StoreCapabilities, capabilities_of, takes_fence
from .encoding import (  # re-exported: the key encoding's home is .encoding
    PATH_SEGMENT_MAX_BYTES,
    Key,
    decode_key,
    decode_segment,
    encode_key,
    encode_prefix,
    encode_segment,
    is_shortened,
    path_segment,
    validate_key,
    validate_prefix,
)
from .timing import time_operations

__all__ = [
    "DEFAULT_MAX_VALUE_BYTES",
    "MAX_TTL",
    "PATH_SEGMENT_MAX_BYTES",
    "BaseStore",
    "Entry",
    "FieldRecords",
    "Fence",
    "Key",
    "StoreBackend",
    "StoreCapabilities",
    "capabilities_of",
    "check_expected",
    "check_size",
    "check_ttl",
    "decode_key",
    "decode_segment",
    "encode_key",
    "encode_prefix",
    "encode_segment",
    "FencedDeletes",
    "fenced_deletes_of",
    "field_records_of",
    "RoundReads",
    "round_reads_of",
    "Signals",
    "get_many",
    "is_shortened",
    "path_segment",
    "shared_across_hosts",
    "shared_across_processes",
    "signals_of",
    "takes_write_options",
    "validate_key",
    "validate_prefix",
]

DEFAULT_MAX_VALUE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Entry:
    """A stored value with its version."""

    value: bytes
    version: int


@dataclass(frozen=True, slots=True)
class Fence:
    """A condition a ``put`` checks atomically on another key: ``key`` holds exactly ``value``.

    A lease holder fences its writes with its lease (key and the value it wrote), so a write after a
    takeover fails. ``release`` deletes ``key`` in the same operation when the write succeeds (the
    last write of a call gives the lease back). On Redis ``key`` should share the written key's
    server (see :mod:`.redis`). ``key`` may be the written key itself, without ``release``: the
    write then requires that the key still holds ``value`` (a lease renewed by its holder).
    """

    key: Key
    value: bytes
    release: bool = False


def check_size(key: Key, value: bytes, limit: int) -> None:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(f"value for key {key!r} must be bytes, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueTooLargeError(key, len(value), limit)


def check_expected(expected_version: int | None) -> None:
    if expected_version is not None and (
        not isinstance(expected_version, int) or expected_version < 0
    ):
        raise ValueError(f"expected_version must be None or an int >= 0, got {expected_version!r}")


#: The longest ``ttl`` a store takes, 100 years in seconds: every backend can hold its expiry
#: (Redis counts milliseconds in a signed 64-bit integer; ``inf`` fits none).
MAX_TTL = 100 * 365 * 86_400


def check_ttl(ttl: float | None) -> None:
    if ttl is not None and not 0 < ttl <= MAX_TTL:
        raise ValueError(
            f"ttl must be a number of seconds > 0 and at most {MAX_TTL} (100 years), got {ttl!r}"
        )


@runtime_checkable
class BaseStore(Protocol):
    """Key-value entries with versions plus append-only streams; an async context manager."""

    async def get(self, key: Key) -> Entry | None: ...

    async def put(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int | None = None,
        ttl: float | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> int: ...

    async def delete(
        self, key: Key, *, expected_version: int | None = None, indexed: bool = True
    ) -> bool: ...

    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]: ...

    async def append(self, stream: Key, value: bytes) -> int: ...

    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]: ...

    async def delete_stream(self, stream: Key) -> bool: ...

    async def aclose(self) -> None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


async def get_many(store: BaseStore, keys: Sequence[Key]) -> list[Entry | None]:
    """The entries of ``keys`` in order (None where absent): the store's own ``get_many`` (one
    round trip where the backend has one) or, for a store without it, one ``get`` per key."""
    native = getattr(store, "get_many", None)
    if native is None:
        return [await store.get(k) for k in keys]
    found: list[Entry | None] = await native(list(keys))
    return found


async def create_then_get(
    store: BaseStore, key: Key, value: bytes, *, ttl: float, read: Key
) -> tuple[int, Entry | None]:
    """Create the unindexed entry ``key`` (``expected_version=0``, ``ttl``; a lease) and then read
    ``read``: the new version and that entry. :class:`VersionConflict` if ``key`` exists (nothing
    is read). The store's own ``create_then_get`` does both in one round trip (Redis: one script,
    ``read`` in ``key``'s cluster slot; PostgreSQL: one call of a function of the schema, whose
    read sees every save committed before the lease was written); other stores write, then
    read."""
    native = getattr(store, "create_then_get", None)
    if native is not None:
        found: tuple[int, Entry | None] = await native(key, value, ttl=ttl, read=read)
        return found
    if capabilities_of(store).fencing:
        version = await store.put(key, value, expected_version=0, ttl=ttl, indexed=False)
    else:
        version = await store.put(key, value, expected_version=0, ttl=ttl)
    return version, await store.get(read)


@runtime_checkable
class FieldRecords(Protocol):
    """The optional capability of keeping named fields beside an entry's value (Redis: fields of
    the entry's hash), so a record can be rewritten in part. Session storage uses it for context
    segments (:mod:`agentscope_teams.sessions.segments`); stores without it keep whole values.

    ``get`` returns only the value; ``get_fields`` reads fields (None where absent).
    ``put_fields`` is a ``put`` of an existing entry (``expected_version`` > 0, ``fence`` as in
    ``put``) that also sets ``fields`` and deletes ``drop`` in the same atomic operation; the fields
    share the entry's ttl and are deleted with it. Field names other than ``v`` and ``n``. A field
    of ``keep`` that is absent is a :class:`VersionConflict` (the entry at that version is not the
    one read: it was deleted and created again) and nothing is written.
    """

    async def get_fields(self, key: Key, fields: Sequence[str]) -> list[bytes | None]: ...

    async def put_fields(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int,
        fields: Sequence[tuple[str, bytes]],
        drop: Sequence[str] = (),
        keep: Sequence[str] = (),
        ttl: float | None = None,
        fence: Fence | None = None,
    ) -> int: ...


def field_records_of(store: object) -> FieldRecords | None:
    """``store`` as :class:`FieldRecords` when it declares the capability
    (:attr:`~.capabilities.StoreCapabilities.field_records`), else None."""
    if capabilities_of(store).field_records and isinstance(store, FieldRecords):
        return store
    return None


@runtime_checkable
class FencedDeletes(Protocol):
    """The optional capability of a ``delete`` fenced like a ``put`` (see the module docs):
    ``fence`` (without ``release``) makes the delete conditional on ``fence.key`` holding exactly
    ``fence.value``, atomically; otherwise :class:`~agentscope_teams.errors.LeaseLostError`."""

    async def delete(
        self,
        key: Key,
        *,
        expected_version: int | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> bool: ...


def fenced_deletes_of(store: object) -> FencedDeletes | None:
    """``store`` as :class:`FencedDeletes` when it declares the capability
    (:attr:`~.capabilities.StoreCapabilities.fenced_delete`), else None: its ``delete`` takes no
    fence (a store written before fenced deletes existed)."""
    if capabilities_of(store).fenced_delete:
        return cast(FencedDeletes, store)
    return None


@runtime_checkable
class RoundReads(Protocol):
    """The optional capability of reading entries and stream pages in one round trip (a
    standalone Redis server: one pipeline; PostgreSQL: one statement). ``get_many_and_read`` returns what ``get_many(keys)``
    and ``read(stream, after=after, limit=limit)`` of each of ``pages`` would."""

    async def get_many_and_read(
        self, keys: Sequence[Key], pages: Sequence[tuple[Key, int, int]]
    ) -> tuple[list[Entry | None], list[list[tuple[int, bytes]]]]: ...


def round_reads_of(store: object) -> RoundReads | None:
    """``store`` as :class:`RoundReads` when it declares the capability
    (:attr:`~.capabilities.StoreCapabilities.round_reads`), else None."""
    if capabilities_of(store).round_reads and isinstance(store, RoundReads):
        return store
    return None


@runtime_checkable
class Signals(Protocol):
    """The optional wake-up capability of a store (see the module docs)."""

    async def signal(self, channel: Key) -> None: ...

    async def wait_signal(self, channels: Sequence[Key], timeout: float) -> bool: ...  # noqa: ASYNC109


def signals_of(store: object) -> Signals | None:
    """``store`` as :class:`Signals` when it has the capability (and it is not switched off with
    ``signals_enabled = False``), else None: the caller polls. A thin wrapper of
    :func:`~.capabilities.capabilities_of`."""
    if capabilities_of(store).signals and isinstance(store, Signals):
        return store
    return None


def takes_write_options(store: object) -> bool:
    """Whether ``store.put`` / ``delete`` take ``indexed=`` and ``fence=`` (every
    :class:`StoreBackend` does; a store written against the first protocol may not, and callers then
    fall back: a separate verify read instead of the fence, indexed writes). A thin wrapper of
    :func:`~.capabilities.capabilities_of` (its ``fencing``)."""
    return capabilities_of(store).fencing


def shared_across_processes(store: object) -> bool:
    """Whether several OS processes may share ``store`` (a store that declares nothing is assumed
    shared, so callers keep their cross-process guards). A thin wrapper of
    :func:`~.capabilities.capabilities_of`."""
    return capabilities_of(store).shared_across_processes


def shared_across_hosts(store: object) -> bool:
    """Whether several hosts may share ``store`` (default False, so a configuration that needs
    several hosts is refused unless the store says it can). A thin wrapper of
    :func:`~.capabilities.capabilities_of`."""
    return capabilities_of(store).shared_across_hosts


class StoreBackend(abc.ABC):
    """The base class backends subclass: context management, size limit and argument checks.

    :class:`BaseStore` is the protocol callers depend on; a subclass implements its operations, and
    ``StoreBackend`` itself satisfies it. (Formerly ``StoreBase``; that name still works, with a
    deprecation warning.)
    """

    #: True when several OS processes may share the store (file, SQL, Redis); False for memory.
    shared_across_processes: bool = True
    #: True when several hosts may share the store (SQL, Redis).
    shared_across_hosts: bool = False
    #: The ``backend`` label of the store's metrics (:mod:`.timing`).
    metrics_backend: str = "custom"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        time_operations(cls)  # latency and errors by backend, when metrics are on

    @property
    def capabilities(self) -> StoreCapabilities:
        """What this store can do (:mod:`.capabilities`); a backend declares its own."""
        return StoreCapabilities(
            signals=bool(getattr(self, "signals_enabled", False)) and isinstance(self, Signals),
            shared_across_processes=self.shared_across_processes,
            shared_across_hosts=self.shared_across_hosts,
            fenced_delete=takes_fence(self, "delete"),
        )

    def __init__(self, *, max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES) -> None:
        self.max_value_bytes = max_value_bytes

    @abc.abstractmethod
    async def get(self, key: Key) -> Entry | None: ...

    async def get_many(self, keys: Sequence[Key]) -> list[Entry | None]:
        """What :meth:`get` returns for each of ``keys``, in order; by default one ``get`` each.

        Backends with a batched read override it. Pass keys of one group (see the module docs).
        """
        return [await self.get(k) for k in keys]

    @abc.abstractmethod
    async def put(
        self,
        key: Key,
        value: bytes,
        *,
        expected_version: int | None = None,
        ttl: float | None = None,
        indexed: bool = True,
        fence: Fence | None = None,
    ) -> int: ...

    @abc.abstractmethod
    async def delete(
        self, key: Key, *, expected_version: int | None = None, indexed: bool = True
    ) -> bool: ...

    @abc.abstractmethod
    async def list_keys(
        self, prefix: Key, *, limit: int = 1000, after: Key | None = None
    ) -> list[Key]: ...

    @abc.abstractmethod
    async def append(self, stream: Key, value: bytes) -> int: ...

    @abc.abstractmethod
    async def read(
        self, stream: Key, *, after: int = 0, limit: int = 100
    ) -> list[tuple[int, bytes]]: ...

    @abc.abstractmethod
    async def delete_stream(self, stream: Key) -> bool: ...

    async def setup(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Create whatever the backend needs (tables, directories). Idempotent."""

    async def aclose(self) -> None:
        """Release what this store created; an injected client belongs to the caller. First wait
        (boundedly) for the work layers above left running on it
        (:mod:`agentscope_teams.store.closing`): a subclass that releases more calls this first."""
        await closing.landed(self)

    async def __aenter__(self) -> Self:
        await self.setup()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def _check_put(
        self, key: Sequence[str], value: bytes, expected_version: int | None, ttl: float | None
    ) -> Key:
        k = validate_key(key)
        check_size(k, value, self.max_value_bytes)
        check_expected(expected_version)
        check_ttl(ttl)
        return k

    @staticmethod
    def _check_delete(key: Sequence[str], expected_version: int | None) -> Key:
        k = validate_key(key)
        check_expected(expected_version)
        return k

    @staticmethod
    def _check_fence(key: Key, fence: Fence | None) -> Fence | None:
        """``fence`` with its key validated; ``ValueError`` if it names the written key itself
        with ``release`` (the write cannot both keep and delete the key)."""
        if fence is None:
            return None
        fk = validate_key(fence.key, "fence key")
        if fk == key and fence.release:
            raise ValueError(
                f"a fence on the written key {key!r} itself cannot release it; "
                "use release=False or fence another key"
            )
        if not isinstance(fence.value, bytes | bytearray | memoryview):
            raise TypeError(f"fence value must be bytes, got {type(fence.value).__name__}")
        return fence if fk is fence.key else Fence(fk, bytes(fence.value), fence.release)

    def _check_delete_fence(self, key: Key, fence: Fence | None) -> Fence | None:
        """A delete's ``fence`` validated as a put's (:meth:`_check_fence`); ``ValueError`` if it
        asks to ``release`` (a delete has no write to release with)."""
        if fence is not None and fence.release:
            raise ValueError(
                f"a fenced delete of {key!r} cannot release {fence.key!r}; use release=False"
            )
        return self._check_fence(key, fence)

    def _check_append(self, stream: Sequence[str], value: bytes) -> Key:
        k = validate_key(stream, "stream")
        check_size(k, value, self.max_value_bytes)
        return k

    @staticmethod
    def _check_page(limit: int, after: int | None = None) -> None:
        if not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an int >= 1, got {limit!r}")
        if after is not None and (not isinstance(after, int) or after < 0):
            raise ValueError(f"after must be an int >= 0, got {after!r}")
