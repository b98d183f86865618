"""How long a 429 asks us to wait, from the headers OpenAI, Anthropic and HTTP use."""

from __future__ import annotations

from datetime import UTC, datetime

from agentscope_teams.model.rate_headers import retry_after_of

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def test_retry_after_in_seconds_milliseconds_and_as_a_date() -> None:
    assert retry_after_of({"Retry-After": "3"}, NOW) == 3.0
    assert retry_after_of({"retry-after-ms": "250"}, NOW) == 0.25
    assert retry_after_of({"Retry-After": "Thu, 01 Jan 2026 12:00:07 GMT"}, NOW) == 7.0


def test_openai_reset_headers_count_only_for_a_spent_limit() -> None:
    spent = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m30s"}
    assert retry_after_of(spent, NOW) == 90.0
    left = {"x-ratelimit-remaining-tokens": "5000", "x-ratelimit-reset-tokens": "6m0s"}
    assert retry_after_of(left, NOW) is None
    assert retry_after_of({"x-ratelimit-reset-tokens": "20ms"}, NOW) == 0.02


def test_anthropic_reset_times_and_the_longest_wait_wins() -> None:
    headers = {
        "anthropic-ratelimit-requests-remaining": "0",
        "anthropic-ratelimit-requests-reset": "2026-01-01T12:00:05Z",
        "retry-after": "2",
    }
    assert retry_after_of(headers, NOW) == 5.0


def test_headers_that_say_nothing_usable_give_none() -> None:
    assert retry_after_of({}, NOW) is None
    assert (
        retry_after_of({"Retry-After": "soon", "x-ratelimit-reset-requests": "later"}, NOW) is None
    )


def test_waits_that_are_not_a_finite_non_negative_number_are_ignored() -> None:
    """``float`` also reads ``nan``, ``inf`` and negatives: none is a wait (``nan`` and ``inf``
    break ``math.ceil`` when the wait is passed on)."""
    for bad in ("nan", "inf", "-5", "-Infinity"):
        assert retry_after_of({"Retry-After": bad}, NOW) is None
        assert retry_after_of({"retry-after-ms": bad}, NOW) is None
    assert retry_after_of({"Retry-After": "nan", "retry-after-ms": "2000"}, NOW) == 2.0
