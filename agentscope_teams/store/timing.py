"""Store operations timed for the metrics: latency and errors by backend and operation.

:class:`~.base.StoreBackend` wraps the operations of every backend class once, at class creation
(:func:`time_operations`). While metrics are off a wrapped call costs one module-attribute read and
one extra coroutine frame. An operation that runs others (a ``put`` that runs a script) is counted
once, as the outer one. Lost compare-and-set writes are not errors (``store_conflicts_total``
counts them), nor are a caller's bad arguments.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from ..errors import LimitError, ValueTooLargeError, VersionConflict
from ..tracing import metrics as _metrics

#: Method name -> ``operation`` label: the store interface and the backends' public escape hatches
#: (a Redis script or command, a SQL transaction). ``wait_signal`` waits by design: not timed.
OPERATIONS = {
    "get": "get",
    "get_many": "get_many",
    "put": "put",
    "delete": "delete",
    "list_keys": "list_keys",
    "append": "append",
    "read": "read",
    "delete_stream": "delete_stream",
    "signal": "signal",
    "run_script": "script",
    "call": "command",
    "write_command": "command",
    "transaction": "transaction",
}
#: Exceptions that are answers, not failures of the store.
NOT_ERRORS = (VersionConflict, ValueTooLargeError, LimitError, ValueError, TypeError, KeyError)
_INSIDE: ContextVar[bool] = ContextVar("agentscope_teams_store_op", default=False)
_MARK = "__agentscope_teams_timed__"


def backend_label(store: object) -> str:
    """The ``backend`` label of ``store``: its ``metrics_backend``, else its class name."""
    found = getattr(store, "metrics_backend", None)
    return found if isinstance(found, str) else type(store).__name__.lower()


def time_operations(cls: type) -> None:
    """Wrap the coroutine methods of ``cls`` named in :data:`OPERATIONS` (once per function)."""
    for name, operation in OPERATIONS.items():
        fn = getattr(cls, name, None)
        if fn is None or not inspect.iscoroutinefunction(fn) or getattr(fn, _MARK, False):
            continue
        setattr(cls, name, _timed(fn, operation))


def _timed(fn: Callable[..., Any], operation: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        m = _metrics.METRICS
        if m is None or _INSIDE.get():
            return await fn(self, *args, **kwargs)
        token = _INSIDE.set(True)
        start = time.perf_counter()
        labels = (backend_label(self), operation)
        if labels not in m.store_errors.values:  # exported at 0 from the first operation on
            m.store_errors.inc(*labels, amount=0)
        try:
            return await fn(self, *args, **kwargs)
        except NOT_ERRORS:
            raise
        except Exception:
            m.store_errors.inc(*labels)
            raise
        finally:
            _INSIDE.reset(token)
            m.store_seconds.observe(time.perf_counter() - start, *labels)

    setattr(timed, _MARK, True)
    return timed
