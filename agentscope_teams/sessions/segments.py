"""Session context as immutable, content-addressed segments: a save sends what changed, a load
parses only segments this process has not seen.

A segmented record (on a store with :class:`~..store.base.FieldRecords`, i.e. Redis) keeps its
context messages in segments beside a small head. A segment is the JSON array of a run of
consecutive messages; its id is the BLAKE2b-128 hash of those bytes, so a segment never changes
under its id and the parsed messages can be shared by every load, session and tenant of the process
(:class:`SegmentCache`, bounded by bytes). Messages are immutable (:mod:`agentscope_teams.message`),
so a message object that a segment holds still encodes to the segment's bytes: a save compares the
context with the previous layout by object identity and sends only the segments after the first
difference (:func:`plan`). New messages go into the last segment while it is under
:data:`SEGMENT_BYTES`, else into new ones, so what a save sends is bounded by the new messages plus
one open segment, whatever the session's size. A rewritten history (compression, truncation) keeps
the segments before the first change and replaces the rest; replaced segments are deleted.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from operator import is_

from pydantic import TypeAdapter, ValidationError

from ..errors import SchemaVersionError
from ..message import Msg, seal

#: A segment stops taking new messages once its JSON reaches this many bytes.
SEGMENT_BYTES = 16 * 1024
#: Default bound of the process-wide cache (segment bytes held; parsed messages take a few times it).
CACHE_BYTES = 32 * 1024 * 1024
#: A store field name of a segment is this prefix and its id.
FIELD_PREFIX = "s:"

_MESSAGES = TypeAdapter(list[Msg])
_MESSAGE = TypeAdapter(Msg)

#: The layout of a record's context: (segment id, message count) per segment, in order.
Layout = tuple[tuple[str, int], ...]


def segment_id(data: bytes) -> str:
    """The content address of a segment's bytes."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def field_of(sid: str) -> str:
    """The store field holding segment ``sid``."""
    return FIELD_PREFIX + sid


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of messages and their JSON array bytes; ``id`` is :func:`segment_id` of ``data``."""

    id: str
    data: bytes
    messages: tuple[Msg, ...]


def make_segment(parts: Sequence[bytes], messages: Sequence[Msg]) -> Segment:
    """The segment of ``messages`` whose JSON encodings (or runs of them) are ``parts``."""
    data = b"[" + b",".join(parts) + b"]"
    msgs = tuple(messages)
    seal(msgs)
    return Segment(segment_id(data), data, msgs)


def parse_segment(sid: str, data: bytes, where: str) -> Segment:
    """The segment stored as ``data`` under ``sid`` (checked against its hash); a segment that
    does not match or parse raises :class:`SchemaVersionError` naming ``where``."""
    if segment_id(data) != sid:
        raise SchemaVersionError(f"context segment {sid} of {where} does not match its hash")
    try:
        msgs = tuple(_MESSAGES.validate_json(data))
    except ValidationError as exc:
        raise SchemaVersionError(f"context segment {sid} of {where} cannot be read: {exc}") from exc
    seal(msgs)
    return Segment(sid, data, msgs)


class SegmentCache:
    """Parsed segments by id, least recently used dropped first once they hold ``max_bytes``."""

    def __init__(self, max_bytes: int = CACHE_BYTES) -> None:
        if max_bytes < 0:
            raise ValueError(f"SegmentCache max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self.bytes = 0
        self._segments: OrderedDict[str, Segment] = OrderedDict()

    def __len__(self) -> int:
        return len(self._segments)

    def get(self, sid: str) -> Segment | None:
        seg = self._segments.get(sid)
        if seg is not None:
            self._segments.move_to_end(sid)
        return seg

    def add(self, seg: Segment) -> None:
        if seg.id in self._segments:
            self._segments.move_to_end(seg.id)
            return
        self._segments[seg.id] = seg
        self.bytes += len(seg.data)
        while self.bytes > self.max_bytes and self._segments:
            _, old = self._segments.popitem(last=False)
            self.bytes -= len(old.data)


#: The process-wide cache every :class:`~.storage.SessionStorage` shares by default.
SHARED_CACHE = SegmentCache()


@dataclass(frozen=True, slots=True)
class Plan:
    """What a save writes: the new ``layout``, the segments to ``add`` and the ids to ``drop``;
    ``kept``: the ids it lists without sending them, which must be stored already."""

    layout: Layout
    add: tuple[Segment, ...]
    drop: tuple[str, ...]
    kept: tuple[str, ...] = ()


def _kept(context: Sequence[Msg], old: Layout, cache: SegmentCache) -> list[Segment]:
    """The leading segments of ``old`` that ``context`` still starts with, message for message."""
    kept: list[Segment] = []
    at = 0
    for sid, count in old:
        part = context[at : at + count]
        if len(part) != count:
            break
        seg = cache.get(sid)
        if seg is None:  # evicted: the same messages encode to the same id
            seg = make_segment([_MESSAGE.dump_json(m) for m in part], part)
            if seg.id != sid:
                break
            cache.add(seg)
        elif not all(map(is_, seg.messages, part)):
            break
        kept.append(seg)
        at += count
    return kept


def plan(context: Sequence[Msg], old: Layout, cache: SegmentCache) -> Plan:
    """Segments for ``context`` given the stored layout ``old``: unchanged leading segments are
    kept, the open last one takes the new messages, the rest are new (module docs)."""
    kept = _kept(context, old, cache)
    at = sum(len(s.messages) for s in kept)
    new: list[Segment] = []
    parts: list[bytes] = []
    msgs: list[Msg] = []
    if at < len(context) and kept and len(kept[-1].data) < SEGMENT_BYTES:
        tail = kept.pop()  # reopened: its bytes are reused, not re-encoded
        parts, msgs, size = [tail.data[1:-1]], list(tail.messages), len(tail.data)
    else:
        size = 0
    for msg in context[at:]:
        if size >= SEGMENT_BYTES:
            new.append(make_segment(parts, msgs))
            parts, msgs, size = [], [], 0
        enc = _MESSAGE.dump_json(msg)
        parts.append(enc)
        msgs.append(msg)
        size += len(enc) + 1
    if msgs:
        new.append(make_segment(parts, msgs))
    layout = tuple((s.id, len(s.messages)) for s in (*kept, *new))
    old_ids = {sid for sid, _ in old}
    now_ids = {sid for sid, _ in layout}
    return Plan(
        layout,
        tuple(s for s in new if s.id not in old_ids),
        tuple(sid for sid in dict.fromkeys(old_ids) if sid not in now_ids),
        tuple(sid for sid in dict.fromkeys(sid for sid, _ in layout) if sid in old_ids),
    )
