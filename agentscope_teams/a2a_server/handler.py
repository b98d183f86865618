"""The SDK's request handler, answering a library error in its public form.

The SDK answers an exception it does not know with an ``InternalError`` carrying the exception's
text; for a store error that text names the store's URL, host, port and database. Every operation
of :class:`PublicErrorsHandler` turns an :class:`~agentscope_teams.errors.AgentScopeTeamsError`
raised under it (by the task store, the push-config store or the event stream) into the SDK's
``InternalError`` with the error's public message (:func:`~agentscope_teams.errors.public_message`);
the server's log keeps the full one. Streams (streaming send, resubscribe) too, mid-stream.

The SDK's "task not found" says only that; ours names the task id and why it may be missing (it
is another caller's, or it ended longer ago than the task retention and was removed) and what to
do (:func:`not_found`).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

from a2a.server.request_handlers import DefaultRequestHandler, RequestHandler
from a2a.utils.errors import InternalError, TaskNotFoundError

from ..errors import AgentScopeTeamsError, public_message

log = logging.getLogger(__name__)


def public_error(exc: AgentScopeTeamsError) -> InternalError:
    """The SDK error a caller gets for ``exc`` (whose full text goes to the log)."""
    log.warning("A2A request failed: %s: %s", type(exc).__name__, exc)
    return InternalError(message=f"{type(exc).__name__}: {public_message(exc)}")


def not_found(params: Any, retention: float | None) -> TaskNotFoundError:
    """The "task not found" of a request with ``params`` (any request naming a task), saying
    which task and why it may be missing."""
    message = getattr(params, "message", None)
    task_id = (
        getattr(message, "task_id", "")
        or getattr(params, "task_id", "")
        or getattr(params, "id", "")
    )
    ended = (
        f", or it ended more than {retention:g} s ago (the server's task retention) and was removed"
        if retention is not None
        else ""
    )
    config = getattr(params, "id", "") if getattr(params, "task_id", "") else ""
    extra = f" (or it has no push-notification config {config!r})" if config else ""
    return TaskNotFoundError(
        message=f"task {task_id!r} not found{extra}: no task of this caller has that id (a task is "
        f"seen only by the caller whose credentials started it){ended}; send a message without "
        "a taskId to start a new task"
    )


def _operation(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(method)
    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return await method(self, *args, **kwargs)
        except AgentScopeTeamsError as exc:
            raise public_error(exc) from exc
        except TaskNotFoundError as exc:
            raise not_found(args[0] if args else None, self.task_retention) from exc

    return call


def _stream(method: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    @functools.wraps(method)
    async def events(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        try:
            async with aclosing(method(self, *args, **kwargs)) as inner:  # type: ignore[type-var]
                async for event in inner:
                    yield event
        except AgentScopeTeamsError as exc:
            raise public_error(exc) from exc
        except TaskNotFoundError as exc:
            raise not_found(args[0] if args else None, self.task_retention) from exc

    return events


class PublicErrorsHandler(DefaultRequestHandler):
    """:class:`DefaultRequestHandler` whose operations answer library errors publicly and say
    why a task is not found (``task_retention``: how long an ended task is kept, if it is)."""

    def __init__(self, *args: Any, task_retention: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.task_retention = task_retention


for _name in sorted(RequestHandler.__abstractmethods__):
    _method = getattr(DefaultRequestHandler, _name)
    _streams = inspect.isasyncgenfunction(inspect.unwrap(_method))
    setattr(PublicErrorsHandler, _name, _stream(_method) if _streams else _operation(_method))
