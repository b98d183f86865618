"""The keys of A2A task records and their push-notification configs (:mod:`agentscope_teams.a2a_server`)."""

from __future__ import annotations

from ..context import org_segment, user_segment
from ..store.base import Key
from ._family import A2A_EVENTS, A2A_PUSH, A2A_REMOTE, A2A_TASK, typed, untyped


def a2a_task_key(org_id: str | None, user_id: str | None, agent: str, task_id: str) -> Key:
    """The A2A task ``task_id`` of the exposed ``agent``, owned by one caller."""
    return A2A_TASK.key(org_segment(org_id), user_segment(user_id), typed("agent", agent), task_id)


def a2a_tasks_prefix(org_id: str | None, user_id: str | None, agent: str) -> Key:
    """Every A2A task of one caller on ``agent``."""
    return A2A_TASK.prefix(org_segment(org_id), user_segment(user_id), typed("agent", agent))


def a2a_every_task_prefix() -> Key:
    """Every A2A task of every caller and exposed agent (a maintenance scan)."""
    return A2A_TASK.prefix()


def a2a_task_of(key: Key) -> tuple[str, str] | None:
    """The exposed agent and the task id of the A2A task record ``key``; None when it is not
    one."""
    found = A2A_TASK.match(key)
    if found is None:
        return None
    agent = untyped(found["agent"], "agent")
    return None if agent is None else (agent, found["a2a_task"])


def a2a_push_key(agent: str, task_id: str, config_id: str) -> Key:
    """One push-notification config of an A2A task (its record names the owner: the sender
    dispatches without a caller)."""
    return A2A_PUSH.key(typed("agent", agent), task_id, config_id)


def a2a_push_prefix(agent: str, task_id: str) -> Key:
    """Every push-notification config of an A2A task."""
    return A2A_PUSH.prefix(typed("agent", agent), task_id)


def a2a_events_key(agent: str, task_id: str) -> Key:
    """The stream of an A2A task's events (status and artifact updates), read by a resubscribe in
    any process; also the name of its wake-up channel (store signals)."""
    return A2A_EVENTS.key(typed("agent", agent), task_id)


def a2a_remote_key(org_id: str | None, user_id: str | None, agent: str, session_id: str) -> Key:
    """The conversation of one of our sessions with the remote A2A agent ``agent`` (a spec)."""
    return A2A_REMOTE.key(
        org_segment(org_id),
        user_segment(user_id),
        typed("agent", agent),
        typed("session", session_id),
    )
