"""Atomic read-modify-write of a few JSON documents, on the memory, file and SQL stores.

:func:`docs_for` gives the backend of a store; ``update(op, names, fn)`` locks the named documents,
calls ``fn`` with them (None for one never written) and writes back what it returns, as one atomic
step across every process sharing the store:

* memory: a lock of the process (the store is not shared between processes anyway);
* file: an ``flock`` on ``<root>/usage/lock``, documents in ``<root>/usage/docs/``, each written
  as the file store writes its own (fsynced under a temporary name, renamed over, the folder
  fsynced: a crash leaves the old or the new document, never an empty one);
* SQL: one transaction on the heads ``<prefix>usage_doc`` and the rows ``<prefix>usage_entry``
  (:mod:`.sql_docs`): the heads read ``FOR UPDATE`` in name order (SQLite: ``BEGIN IMMEDIATE``),
  then only the entries the step names (``wanted``), then what changed written back (PostgreSQL
  runs a call's admit and finish as one statement each instead: :mod:`.sql_pg`).

The memory and file backends keep whole documents, so they ignore ``wanted``.

Redis does not use this module: its scripts (:mod:`.redis_lua`) do each step in one round trip.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import threading
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

import anyio
import anyio.to_thread

from ..errors import ConfigurationError
from ..store._jsonfile_io import damaged, write_atomic
from ..store._jsonfile_locks import close_lock_fd, open_lock_fd
from .rules import Doc, Wanted, uncounted

if TYPE_CHECKING:
    pass

T = TypeVar("T")
Change = Callable[[dict[str, Doc | None]], tuple[dict[str, Doc], T]]


class DocBackend(Protocol):
    async def update(
        self, op: str, names: Sequence[str], fn: Change[T], wanted: Wanted | None = None
    ) -> T:
        """Run ``fn`` on the documents ``names`` and write back what it returns, atomically;
        ``wanted``: the entries of their maps ``fn`` needs (None: all; a backend keeping whole
        documents gives all of them anyway)."""


def doc_id(name: str) -> str:
    """The fixed-length id a document is stored under."""
    return hashlib.sha256(name.encode()).hexdigest()


class MemoryDocs:
    """Documents in this process, under one lock."""

    def __init__(self) -> None:
        self._docs: dict[str, Doc] = {}
        self._lock = threading.Lock()

    async def update(
        self, op: str, names: Sequence[str], fn: Change[T], wanted: Wanted | None = None
    ) -> T:
        with self._lock:
            new, result = fn({n: self._docs.get(n) for n in names})
            self._docs.update(json.loads(json.dumps({n: uncounted(d) for n, d in new.items()})))
            return result


class FileDocs:
    """Documents as files beside a file store's data, under one ``flock``."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "usage"
        self._thread_lock = threading.Lock()

    async def update(
        self, op: str, names: Sequence[str], fn: Change[T], wanted: Wanted | None = None
    ) -> T:
        return await anyio.to_thread.run_sync(lambda: self._update_sync(names, fn))

    def _update_sync(self, names: Sequence[str], fn: Change[T]) -> T:
        docs = self.dir / "docs"
        docs.mkdir(parents=True, exist_ok=True)
        with self._thread_lock:
            fd = open_lock_fd(self.dir / "lock")  # a child forked meanwhile closes its copy
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                found = {n: _read(docs / doc_id(n)) for n in names}
                new, result = fn(found)
                for name, doc in new.items():  # fsynced, renamed, the folder fsynced
                    data = json.dumps(uncounted(doc)).encode()  # as releases before counts
                    write_atomic(docs / doc_id(name), data)
                return result
            finally:
                close_lock_fd(fd)  # closing releases the flock


def _read(path: Path) -> Doc | None:
    """The document at ``path`` (None: never written); a damaged one is a StoreError naming it."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise _damaged(path, f"is not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise _damaged(path, "is not a JSON object")
    return doc


def _damaged(path: Path, problem: str) -> Exception:
    return damaged(
        path,
        f"usage document {problem}; delete it to start this budget's or rate limit's counts "
        "again (its calls in flight are forgotten)",
    )


_MEMORY: weakref.WeakKeyDictionary[object, DocBackend] = weakref.WeakKeyDictionary()


def docs_for(store: object) -> DocBackend:
    """The document backend of ``store`` (memory, file or SQL store); one per store object."""
    found = _MEMORY.get(store)
    if found is not None:
        return found
    from ..store.jsonfile import JsonFileStore
    from ..store.memory import InMemoryStore
    from ..store.sql import SqlStore

    backend: DocBackend
    if isinstance(store, InMemoryStore):
        backend = MemoryDocs()
    elif isinstance(store, JsonFileStore):
        backend = FileDocs(store.root)
    elif isinstance(store, SqlStore):
        from .sql_docs import SqlDocs  # SQLAlchemy only when a SQL store is in use

        if store.dialect == "mysql":
            from .sql_mysql import MysqlDocs  # the steps on the asyncmy connection

            backend = MysqlDocs(store)
        else:
            backend = SqlDocs(store)
    else:
        raise ConfigurationError(
            f"budgets and rate limits need a memory, file, SQL or Redis store, got "
            f"{type(store).__name__}"
        )
    _MEMORY[store] = backend
    return backend
