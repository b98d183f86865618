from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentscope_teams.model.retry import backoff_delay, retry_after_seconds

NOW = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, None),
        ({"retry-after": "2"}, 2.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after": "-3"}, 0.0),
        ({"retry-after": "Wed, 01 Jan 2025 12:00:30 GMT"}, 30.0),
        ({"retry-after": "Wed, 01 Jan 2025 11:00:00 GMT"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
    ],
)
def test_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after_seconds(headers, now=NOW) == expected


def test_backoff_is_exponential_with_jitter_and_capped() -> None:
    for attempt, (low, high) in enumerate([(0.5, 1.0), (1.0, 2.0), (2.0, 4.0)]):
        assert low <= backoff_delay(attempt, base=1.0, cap=100.0) <= high
    assert backoff_delay(30, base=1.0, cap=5.0) <= 5.0
    assert backoff_delay(0, base=1.0, cap=5.0, retry_after=60.0) == 5.0
    assert backoff_delay(3, base=1.0, cap=5.0, retry_after=0.0) == 0.0
