"""The SDK's request handler, answering a library error in its public form.

The SDK answers an exception it does not know with an ``InternalError`` carrying the exception's
text; for a store error that text names the store's URL, host, port and database. Every operation
of :class:`PublicErrorsHandler` turns an :class:`~agentscope_teams.errors.AgentScopeTeamsError`
raised under it (by the task store, the push-config store or the event stream) into the SDK's
``InternalError`` with the error's public message (:func:`~agentscope_teams.errors.public_message`);
the server's log keeps the full one. Streams (streaming send, resubscribe) too, mid-stream.

The SDK's "task not found", "task cannot be canceled" and "task is in terminal state" say only
that; ours name the task and why (another caller's, ended longer ago than the task retention,
already ended) and what to do. A
``contextId`` that cannot name a session is refused as invalid params before a task is made.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from typing import Any

from a2a.server.request_handlers import DefaultRequestHandler, RequestHandler
from a2a.types.a2a_pb2 import TaskState
from a2a.utils.errors import (
    InternalError,
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from ..context import MAX_ID_LENGTH, validate_identifier
from ..errors import AgentScopeTeamsError, public_message
from .stores import ENDED

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


def _params_and_context(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """The request and the call context of a handler operation (``(params, context)``)."""
    params = args[0] if args else kwargs.get("params")
    context = args[1] if len(args) > 1 else kwargs.get("context")
    return params, context


_TRANSLATED = (
    AgentScopeTeamsError,
    TaskNotFoundError,
    TaskNotCancelableError,
    UnsupportedOperationError,
)


def _operation(method: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    @functools.wraps(method)
    async def call(self: PublicErrorsHandler, *args: Any, **kwargs: Any) -> Any:
        params, context = _params_and_context(args, kwargs)
        check_request(params)
        try:
            return await method(self, *args, **kwargs)
        except _TRANSLATED as exc:
            raise await self.translate(exc, params, context) from exc

    return call


def _stream(method: Callable[..., AsyncIterator[Any]]) -> Callable[..., AsyncIterator[Any]]:
    @functools.wraps(method)
    async def events(self: PublicErrorsHandler, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        params, context = _params_and_context(args, kwargs)
        check_request(params)
        try:
            async with aclosing(method(self, *args, **kwargs)) as inner:  # type: ignore[type-var]
                async for event in inner:
                    yield event
        except _TRANSLATED as exc:
            raise await self.translate(exc, params, context) from exc

    return events


def check_request(params: Any) -> None:
    """Refuse, as invalid params, a request the SDK would take but this server cannot serve: a
    ``contextId`` that cannot name a session (too long, control characters, ...)."""
    context_id = getattr(getattr(params, "message", None), "context_id", "")
    if not context_id:
        return
    try:
        validate_identifier(context_id, "contextId")
    except ValueError as exc:
        raise InvalidParamsError(
            message=f"{exc}. The contextId names the conversation (a session of this server): "
            f"send one of 1-{MAX_ID_LENGTH} printable characters, or none to start a new one"
        ) from None


class PublicErrorsHandler(DefaultRequestHandler):
    """:class:`DefaultRequestHandler` whose operations answer library errors publicly, say why a
    task is not found (``task_retention``: how long an ended task is kept, if it is), cannot be
    cancelled, or takes no more messages (it has ended), and refuse a contextId that cannot be a
    session (:func:`check_request`)."""

    def __init__(self, *args: Any, task_retention: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.task_retention = task_retention

    async def translate(self, exc: Exception, params: Any, context: Any) -> Exception:
        """The error the caller gets for ``exc``, raised by the operation on ``params``."""
        if isinstance(exc, AgentScopeTeamsError):
            return public_error(exc)
        if isinstance(exc, TaskNotFoundError):
            return not_found(params, self.task_retention)
        if isinstance(exc, TaskNotCancelableError):
            return await self._not_cancelable(params, context)
        if isinstance(exc, UnsupportedOperationError):
            return await self._ended(exc, params, context)
        return exc

    async def _ended_state(self, task_id: str, context: Any) -> str | None:
        """``completed``, ``failed``, ... when the caller's task ``task_id`` has ended, else None."""
        try:
            stored = await self._versioned_store.get(task_id, context) if task_id else None
        except AgentScopeTeamsError:
            return None
        if stored is None or stored.task.status.state not in ENDED:
            return None
        return TaskState.Name(stored.task.status.state).removeprefix("TASK_STATE_").lower()

    async def _ended(
        self, exc: UnsupportedOperationError, params: Any, context: Any
    ) -> UnsupportedOperationError:
        """A message sent to, or a subscribe to, a task that has ended: say so and what to do."""
        message = getattr(params, "message", None)
        task_id = str(getattr(message, "task_id", "") if message else getattr(params, "id", ""))
        state = await self._ended_state(task_id, context)
        if state is None:
            return exc
        if message is not None:
            return UnsupportedOperationError(
                message=f"task {task_id!r} has ended ({state}) and takes no more messages; send "
                "the message without a taskId (with the task's contextId to go on in the same "
                "conversation)"
            )
        return UnsupportedOperationError(
            message=f"task {task_id!r} has ended ({state}): there is nothing left to follow; "
            "read its outcome with GetTask"
        )

    async def _not_cancelable(self, params: Any, context: Any) -> TaskNotCancelableError:
        task_id = str(getattr(params, "id", ""))
        state = await self._ended_state(task_id, context)
        if state is not None:
            return TaskNotCancelableError(
                message=f"task {task_id!r} cannot be cancelled: it has already ended ({state}); "
                "only a submitted, working or input-required task can be; read its outcome "
                "with GetTask"
            )
        return TaskNotCancelableError(
            message=f"task {task_id!r} could not be cancelled: it changed while the cancel was "
            "written (another process is saving it); read it with GetTask and cancel again "
            "if it is still running"
        )


for _name in sorted(RequestHandler.__abstractmethods__):
    _method = getattr(DefaultRequestHandler, _name)
    _streams = inspect.isasyncgenfunction(inspect.unwrap(_method))
    setattr(PublicErrorsHandler, _name, _stream(_method) if _streams else _operation(_method))
