"""How long an A2A task record lives: the one home of the retention and input time-out rules.

* A task that has ended (:data:`ENDED`) is kept ``retention`` seconds (a day by default), then
  its record expires (a store TTL).
* A task waiting for its caller (:data:`WAITING`: ``input-required``, ``auth-required``) waits at
  most ``input_timeout`` seconds (7 days by default) from the status that paused it. After that
  it has ended: it reads as ``canceled``, with a status message saying why and the time of the
  time-out, and is kept ``retention`` seconds more like any ended task. Its record is written at
  the pause with a TTL of ``input_timeout + retention``, so it goes even if nobody reads it.
* A task submitted or working has no TTL (it is never removed under its runner).

A2A clients follow a task until it reaches a terminal state; a waiting task that vanished would
answer "task not found", which a client cannot tell from a wrong id. ``canceled`` is the state
our own client gives a remote task it abandons while it waits (:mod:`agentscope_teams.a2a.remote`),
and what the caller would have done itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from a2a.types.a2a_pb2 import Message, Part, Role, Task, TaskState

from ..errors import ConfigurationError

#: How long an ended task (and its push configs) is kept by default: a day, for callers that read
#: a result later (``tasks/get``) or list what ran; ``a2a_app(task_retention=...)`` and
#: ``serve --a2a-task-retention`` change it.
TASK_RETENTION_SECONDS = 24 * 3600.0
#: How long a task waits for its caller's input by default: 7 days; ``a2a_app(input_timeout=...)``
#: and ``serve --a2a-input-timeout`` change it.
INPUT_TIMEOUT_SECONDS = 7 * 24 * 3600.0
#: The states after which a task never changes again.
ENDED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
#: The states in which a task waits for its caller.
WAITING = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})


def check_seconds(seconds: float, name: str, what: str, default: float) -> float:
    """``seconds`` as a float; a :class:`ConfigurationError` naming ``name`` (the parameter or
    flag), ``what`` it bounds and the default when it is not a positive, finite number."""
    if not (isinstance(seconds, int | float) and math.isfinite(seconds) and seconds > 0):
        raise ConfigurationError(
            f"{name} must be a positive number of seconds ({what}), got {seconds!r}; "
            f"the default is {default:g}"
        )
    return float(seconds)


def check_retention(seconds: float, name: str = "task_retention") -> float:
    """``seconds`` as a task retention (see :func:`check_seconds`)."""
    return check_seconds(
        seconds, name, "how long an ended A2A task is kept", TASK_RETENTION_SECONDS
    )


def check_input_timeout(seconds: float, name: str = "input_timeout") -> float:
    """``seconds`` as an input time-out (see :func:`check_seconds`)."""
    what = "how long an A2A task waits for input before it is cancelled"
    return check_seconds(seconds, name, what, INPUT_TIMEOUT_SECONDS)


def status_time(task: Task) -> float | None:
    """The time (Unix seconds) of ``task``'s status, None when it has none."""
    if not task.status.HasField("timestamp"):
        return None
    return float(task.status.timestamp.ToNanoseconds()) / 1e9


@dataclass(frozen=True)
class Lifetimes:
    """The retention of ended tasks and the input time-out of waiting ones (seconds)."""

    retention: float = TASK_RETENTION_SECONDS
    input_timeout: float = INPUT_TIMEOUT_SECONDS

    def __post_init__(self) -> None:
        check_retention(self.retention)
        check_input_timeout(self.input_timeout)

    def ttl_of(self, task: Task) -> float | None:
        """The TTL a record of ``task`` is written with now: the retention once it has ended,
        the input time-out and the retention while it waits, none while it runs."""
        if task.status.state in ENDED:
            return self.retention
        if task.status.state in WAITING:
            return self.input_timeout + self.retention
        return None

    def timed_out(self, task: Task, now: float) -> Task | None:
        """``task`` as it stands at ``now`` when it waited for input longer than the time-out:
        cancelled, saying why, its status time the time-out's; None when it did not."""
        since = status_time(task) if task.status.state in WAITING else None
        if since is None or now < since + self.input_timeout:
            return None
        ended = Task()
        ended.CopyFrom(task)
        if task.status.HasField("message"):
            ended.history.append(task.status.message)
        text = (
            f"cancelled by the server: no input within {self.input_timeout:g} s (the server's "
            "input time-out); send the message again without taskId to go on in this context"
        )
        ended.status.state = TaskState.TASK_STATE_CANCELED
        ended.status.message.CopyFrom(
            Message(
                message_id=f"{task.id}-input-timeout",
                context_id=task.context_id,
                task_id=task.id,
                role=Role.ROLE_AGENT,
                parts=[Part(text=text)],
            )
        )
        ended.status.timestamp.FromNanoseconds(int((since + self.input_timeout) * 1e9))
        return ended

    def left(self, task: Task, now: float) -> float:
        """Seconds the record of the ended ``task`` has left at ``now`` (its status time plus the
        retention; the whole retention when it has no status time). At most 0: it is past."""
        since = status_time(task)
        return self.retention if since is None else since + self.retention - now
