"""The Redis names of a :class:`~agentscope_teams.store.redis.RedisStore`'s keys (no I/O).

``N`` is the namespace, ``T`` is ``hash_tag_segments``; segments are escaped by
:func:`~agentscope_teams.store.base.encode_segment`, so ``{``, ``}``, ``:``, ``*`` never appear raw.
On one server the name of a key or prefix ``(s1, .., sn)`` is ``N:{s1/../sT}/sT+1/../sn``
(``N:{s1/../sn}`` when ``n <= T``)::

    <name>                 entry: hash {v: value, n: version}; PEXPIRE when written with a ttl
    <name of prefix>:idx   index of a prefix: sorted set, score 0, one member per key below it
                           (the key's encoding relative to the prefix), listed with ZRANGEBYLEX
    N::idx                 index of the empty prefix (every key of the namespace)
    <name>:stream          stream entries: a Redis stream whose ids are ``0-<seq>``
    <name>:seq             the stream's counter (INCR); delete_stream keeps it, so seqs never repeat

Hash tags (one server): the tag is the first ``T`` segments, so an entry, its stream, its counter
and the indexes of its prefixes with at least ``T`` segments share one hash slot. On a Redis
Cluster keys are tagged by their key-registry group instead (the store's ``key_groups``,
:mod:`._redis_cluster`).

Hot path: a key's names (entry, ancestor indexes and members) are computed once and kept in a
bounded cache, so a put or get of a known key does no escaping.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import _redis_cluster as cluster
from .base import Key, encode_segment, validate_key

NAME_CACHE_SIZE = 4096


class KeyNames:
    """The names of one store's keys: its namespace, tag length and cluster grouping."""

    def __init__(
        self, namespace: str, tag_segments: int, cluster: bool, groups: Mapping[str, int]
    ) -> None:
        self.namespace, self.tag_segments, self.cluster = namespace, tag_segments, cluster
        #: Literal -> group size of the key registry (used on a cluster only).
        self.groups = groups
        # key -> (entry name, ancestor index names, members); stream -> (stream, counter).
        self.entries: dict[Key, tuple[str, list[str], list[str]]] = {}
        self.streams: dict[Key, tuple[str, str]] = {}

    def name(self, key: Key, kind: str = "") -> str:
        """The Redis name of ``key`` (``kind`` names a companion: ``:idx``, ``:stream``, ...)."""
        return self.encoded([encode_segment(s) for s in key], kind)

    def encoded(self, enc: list[str], kind: str = "") -> str:
        """The Redis name of a key given as its escaped segments."""
        t = self.tag_segments
        if self.cluster:
            return cluster.cluster_name(self.namespace, enc, kind, t, self.groups)
        tail = "".join("/" + e for e in enc[t:])
        return f"{self.namespace}:{{{'/'.join(enc[:t])}}}{tail}{kind}"

    def index(self, prefix: Key) -> str:
        return self.name(prefix, ":idx") if prefix else f"{self.namespace}::idx"

    def tag_length(self, enc: list[str]) -> int:
        """How many leading segments of a key (escaped) its cluster tag covers."""
        return cluster.tag_length(enc, self.tag_segments, self.groups)[0]

    def is_short(self, prefix: Key) -> bool:
        """Whether a cluster listing of ``prefix`` goes through a tag registry (not an index)."""
        enc = [encode_segment(s) for s in prefix]
        return cluster.is_short(enc, self.tag_segments, self.groups)

    def registry(self, prefix: Key) -> str:
        """The tag registry of a short prefix (cluster)."""
        return cluster.registry_name(self.namespace, [encode_segment(s) for s in prefix])

    def registrations(self, key: Key) -> list[tuple[str, str]]:
        """(registry, member) for every short prefix of ``key`` (cluster)."""
        enc = [encode_segment(s) for s in key]
        found = cluster.registrations(self.namespace, enc, self.tag_segments, self.groups)
        return [(reg, member) for reg, member, _ in found]

    def of(self, key: Key) -> tuple[str, list[str], list[str]]:
        """``key``'s entry name, the index keys of its proper prefixes and its member in each.

        From the cache when known; otherwise every segment is escaped once and the names are
        joined from the escaped segments. ``key`` must already be validated.
        """
        names = self.entries.get(key)
        if names is None:
            if len(self.entries) >= NAME_CACHE_SIZE:
                self.entries.clear()  # cheap and rare: a working set larger than the cache
            enc = [encode_segment(s) for s in key]
            # The shortest prefix whose index the scripts maintain: its tag prefix on a cluster.
            first = self.tag_length(enc) if self.cluster else 0
            indexes = [f"{self.namespace}::idx"] if first == 0 else []
            indexes += [self.encoded(enc[:d], ":idx") for d in range(max(first, 1), len(enc))]
            members = ["/".join(enc[d:]) for d in range(first, len(enc))]
            names = self.entries[key] = (self.encoded(enc), indexes, members)
        return names

    def entry(self, key: Key) -> str:
        """The entry name of a validated key (from the cache when known: a read needs no index)."""
        cached = self.entries.get(key)
        return cached[0] if cached is not None else self.name(key)

    def stream(self, stream: Key) -> tuple[str, str]:
        """``stream``'s Redis stream and counter names, from the cache when known."""
        names = self.streams.get(stream)
        if names is None:
            if len(self.streams) >= NAME_CACHE_SIZE:
                self.streams.clear()
            names = self.streams[stream] = (self.name(stream, ":stream"), self.name(stream, ":seq"))
        return names


def valid(key: Key, known: dict[Key, Any], what: str) -> Key:
    """``key`` validated; a key in the cache ``known`` was validated when it was added."""
    if type(key) is tuple:
        try:
            if key in known:
                return key
        except TypeError:  # an unhashable segment: validate_key says what is wrong
            pass
    return validate_key(key, what)
