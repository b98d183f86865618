"""Readiness of a store: one cheap read with a short timeout (``/readyz`` of ``serve`` and ``worker``)."""

from __future__ import annotations

import anyio

from .base import BaseStore

#: The key read by the check (it never exists: a miss is the answer).
READY_KEY = ("health", "ready")
READY_TIMEOUT = 2.0


async def store_unready(store: BaseStore, timeout: float = READY_TIMEOUT) -> str | None:  # noqa: ASYNC109
    """None when the store answers one read within ``timeout`` seconds, else why not (the error's
    type and message, or the timeout), for a 503 body."""
    try:
        with anyio.fail_after(timeout):
            await store.get(READY_KEY)
    except TimeoutError:
        return f"store did not answer a read within {timeout:g}s"
    except Exception as exc:
        return f"store read failed: {type(exc).__name__}: {str(exc)[:300]}"
    return None
