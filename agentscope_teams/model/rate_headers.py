"""How long a provider asks us to wait after a 429, from its response headers.

Read, longest wins: ``retry-after-ms``, ``retry-after`` (seconds or an HTTP date), OpenAI's
``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens`` (durations such as ``1s``, ``6m0s``,
``20ms``) when the matching ``x-ratelimit-remaining-*`` is 0, and Anthropic's
``anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset`` (RFC 3339 times) when
the matching ``-remaining`` is 0.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _number(text: str) -> float | None:
    """``text`` as a wait in seconds or milliseconds: a finite number >= 0, else None."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _duration(text: str) -> float | None:
    parts = _DURATION.findall(text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        return None
    return sum(float(n) * _UNIT[u] for n, u in parts)


def _until(text: str, now: datetime) -> float | None:
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        try:
            when = parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - now).total_seconds())


def _spent(headers: Mapping[str, str], name: str) -> bool:
    value = headers.get(name)
    return value is None or value.strip() == "0"


def retry_after_of(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """Seconds to wait before the next request, or None when the headers do not say."""
    now = now or datetime.now(UTC)
    h = {k.lower(): v for k, v in headers.items()}
    found: list[float] = []
    if "retry-after-ms" in h and (ms := _number(h["retry-after-ms"])) is not None:
        found.append(ms / 1000)
    if "retry-after" in h:
        raw = h["retry-after"].strip()
        wait = _number(raw)
        if wait is None:
            wait = _until(raw, now)
        if wait is not None:
            found.append(wait)
    for kind in ("requests", "tokens"):
        reset = h.get(f"x-ratelimit-reset-{kind}")
        if reset and _spent(h, f"x-ratelimit-remaining-{kind}"):
            wait = _duration(reset)
            if wait is not None:
                found.append(wait)
    for kind in ("requests", "tokens", "input-tokens", "output-tokens"):
        reset = h.get(f"anthropic-ratelimit-{kind}-reset")
        if reset and _spent(h, f"anthropic-ratelimit-{kind}-remaining"):
            wait = _until(reset, now)
            if wait is not None:
                found.append(wait)
    return max(found) if found else None
