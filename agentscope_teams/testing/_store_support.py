"""Helpers of the store conformance suite: key sets, listing and expiry helpers."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import anyio
import pytest

from ..store import Entry, Key, StoreBackend, encode_key

#: ``store_factory(**options)``: a new store (an async context manager), with backend options such
#: as ``max_value_bytes`` passed through.
StoreFactory = Callable[..., StoreBackend]


def unique_namespace() -> str:
    """A key segment unique to one test, so tests sharing a server never see each other's data."""
    return "t-" + uuid.uuid4().hex[:12]


TTL = 0.5
#: How long we keep polling for an expired key. Generous on purpose: we never assert how fast a
#: backend expires entries, only that it eventually does.
EXPIRY_DEADLINE = 20.0


def by_encoding(keys: list[Key]) -> list[Key]:
    return sorted(keys, key=encode_key)


async def wait_until_absent(store: StoreBackend, key: Key) -> None:
    deadline = anyio.current_time() + EXPIRY_DEADLINE
    while await store.get(key) is not None:
        if anyio.current_time() > deadline:
            pytest.fail(f"{key!r} written with ttl={TTL} is still present after {EXPIRY_DEADLINE}s")
        await anyio.sleep(0.05)


async def list_all(store: StoreBackend, prefix: Key, page: int = 100) -> list[Key]:
    out: list[Key] = []
    after: Key | None = None
    while True:
        batch = await store.list_keys(prefix, limit=page, after=after)
        assert len(batch) <= page
        out.extend(batch)
        if len(batch) < page:
            return out
        after = batch[-1]


UNICODE_SEGMENTS = [
    "😀",
    "🧑‍🤝‍🧑",
    "日本語",
    "中文键",
    "한국어",
    "שלום",
    "مرحبا",
    "\u202eevil",
    "é",
    "e\u0301",
    "ß",
    "ss",
    "Ω",
    "\u00a0",
    "\ufeff",
]

HOSTILE_SEGMENTS = [
    ":",
    "/",
    "..",
    ".",
    "...",
    "{}",
    "{a}",
    "a",
    "A",
    "a ",
    " a",
    "*",
    "?",
    "[x]",
    "%",
    "%2F",
    "%25",
    "%2E",
    "a/b",
    "a:b",
    "b",
    "../../etc",
    "..\\..",
    "\\",
    "#",
    "|",
    "~",
    "\t",
    "\n",
    "\r",
    "\x7f",
    "-",
    "_",
    "'",
    '"',
    "'; DROP TABLE store; --",
    "<>",
    "$1",
    "NUL",
    "con",
]


async def assert_round_trip_without_collisions(
    store: StoreBackend, ns: str, keys: list[Key]
) -> None:
    assert len(set(keys)) == len(keys)
    for i, key in enumerate(keys):
        assert await store.put(key, f"value-{i}".encode(), expected_version=0) == 1, key
    for i, key in enumerate(keys):
        assert await store.get(key) == Entry(f"value-{i}".encode(), 1), key
    assert await list_all(store, (ns,)) == by_encoding(keys)


BAD_KEYS: list[tuple[str, Callable[[str], object]]] = [
    ("nul", lambda ns: (ns, "a\x00b")),
    ("nul-only", lambda ns: (ns, "\x00")),
    ("empty-segment", lambda ns: (ns, "")),
    ("empty-first-segment", lambda ns: ("", ns)),
    ("empty-key", lambda ns: ()),
    ("int-segment", lambda ns: (ns, 1)),
    ("none-segment", lambda ns: (ns, None)),
    ("bytes-segment", lambda ns: (ns, b"a")),
    ("plain-str", lambda ns: ns),
]
