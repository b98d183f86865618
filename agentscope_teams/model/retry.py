"""Retry timing: bounded exponential backoff with jitter, and ``Retry-After`` parsing."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime


def retry_after_seconds(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def backoff_delay(
    attempt: int, *, base: float, cap: float, retry_after: float | None = None
) -> float:
    """Delay before retry number ``attempt`` (0-based): ``Retry-After`` if given, else
    ``base * 2**attempt`` with jitter (50-100 %); never more than ``cap``."""
    if retry_after is not None:
        return min(retry_after, cap)
    return min(cap, base * 2.0**attempt) * random.uniform(0.5, 1.0)
