"""Orderings and filters of session listings, and the comparison that makes an import idempotent."""

from __future__ import annotations

from typing import Literal

from .origins import ChannelOrigin, ScheduleOrigin
from .records import SessionBody, SessionRecord

ListOrder = Literal["newest", "oldest", "key"]
ImportOutcome = Literal["created", "updated", "unchanged"]
ORDERS: tuple[ListOrder, ...] = ("newest", "oldest", "key")


def ordered(records: list[SessionRecord], order: ListOrder) -> list[SessionRecord]:
    """``records`` (given in key order) in ``order``; equal ``created_at`` keeps key order."""
    if order == "key":
        return list(records)
    if order not in ORDERS:
        raise ValueError(f"order={order!r}: expected one of {', '.join(ORDERS)}")
    return sorted(records, key=lambda r: r.created_at, reverse=order == "newest")


def by_schedule(records: list[SessionRecord], schedule_id: str) -> list[SessionRecord]:
    return [
        r
        for r in records
        if isinstance(r.origin, ScheduleOrigin) and r.origin.schedule_id == schedule_id
    ]


def by_channel(records: list[SessionRecord], channel_id: str) -> list[SessionRecord]:
    return [
        r
        for r in records
        if isinstance(r.origin, ChannelOrigin) and r.origin.channel_id == channel_id
    ]


def same_body(stored: SessionBody, new: SessionBody) -> bool:
    """Whether writing ``new`` over ``stored`` would change nothing."""
    return stored.model_dump(mode="json") == new.model_dump(mode="json")
