"""The key registry: every logical key layout of the store, built and parsed in one place.

A key is a tuple of string segments (:data:`~agentscope_teams.store.Key`); backends escape every
segment again. ``o``, ``u`` are the typed org and user segments (``o:<org>``, ``u:<user>``; ``o:`` /
``u:`` alone mean no tenant / anonymous, see :mod:`agentscope_teams.context`); ``a:`` and ``s:``
mark agent and session ids.

``group`` is the leading part that groups a family's keys: every key sharing it must share one Redis
Cluster hash slot (:func:`group_of`). Streams (``append`` / ``read``) are marked *stream*.

=============  ========================================================  =====================
family         key                                                       group
=============  ========================================================  =====================
session        ("sessions", o, u, a:agent, s:session)                    (lit, o, u)
session-lease  ("leases", o, u, a:agent, s:session)                      (lit, o, u)
run            ("subagents", o, u, s:parent_session, run_id)             (lit, o, u)
run-lease      ("subagent-leases", o, u, s:parent_session, run_id)       (lit, o, u)
run-inbox      stream ("subagent-inbox", o, u, a:agent, s:session)       (lit, o, u)
run-inbox-ack  ("subagent-inbox-ack", o, u, a:agent, s:session)          (lit, o, u)
run-mail       stream ("subagent-mail", o, u, s:parent_session, run_id)  (lit, o, u)
run-mail-ack   ("subagent-mail-ack", o, u, s:parent_session, run_id)     (lit, o, u)
agent-memory   ("agent-memory", o, u, scope, a:agent)                    (lit, o, u)
a2a-task       ("a2a-tasks", o, u, a:agent, a2a_task)                    (lit, o, u)
a2a-push       ("a2a-push", a:agent, a2a_task, push)                     (lit, a:agent, a2a_task)
a2a-events     stream ("a2a-events", a:agent, a2a_task)                  (lit, a:agent, a2a_task)
a2a-remote     ("a2a-remote", o, u, a:agent, s:session)                  (lit, o, u)
team-index     ("teams", o, u, "_index", team_id)                        (lit, o, u, "_index")
team           ("teams", o, u, team_id, "team")                          (lit, o, u, team_id)
task           ("teams", o, u, team_id, "task", task_id)                 (lit, o, u, team_id)
task-seq       stream ("teams", o, u, team_id, "task-seq")               (lit, o, u, team_id)
pending-task   ("teams", o, u, team_id, "open", seq12, task_id)          (lit, o, u, team_id)
held-task      ("teams", o, u, team_id, "held", expiry14, task_id)       (lit, o, u, team_id)
owned-task     ("teams", o, u, team_id, "owned", member, seq12, task)    (lit, o, u, team_id)
member-inbox   stream ("teams", o, u, team_id, "inbox", member)          (lit, o, u, team_id)
inbox-cursor   ("teams", o, u, team_id, "cursor", member)                (lit, o, u, team_id)
event-log      ("teams", o, u, team_id, "events", stream, chunk)         (lit, o, u, team_id)
member-lease   ("team-member-lease", o, u, team_id, member)              (lit, o, u, team_id)
team-signal    ("teams", o, u, team_id, "signal")                        (lit, o, u, team_id)
team-runtime   ("team-runtime", o, u, team_id)                           (lit, o, u, team_id)
team-parked    ("teams", o, u, team_id, "runtime")                       (lit, o, u, team_id)
teams-signal   ("team-directory", "signal")                              (lit, "signal")
token          ("tokens", sha256_hex)                                    (lit, sha256_hex)
token-index    ("token-index", o, u, team_id, member, sha256_hex)        (lit, o, u, team_id)
=============  ========================================================  =====================

Sessions, leases, runs and agent memories group per user, everything of a team per team, the team registry per
user, tokens per token. ``team-signal`` and ``teams-signal`` (one for the whole store: a team's
record was written, workers scan the directory) name wake-up channels (store signals, see
:func:`~agentscope_teams.store.base.signals_of`), never an entry. ``seq12`` is the task's number zero-padded to 12 digits, so the pending
index lists oldest first; its segment is still ``"open"`` (it held every unfinished task before
in-progress tasks moved to ``held-task``), so boards written before keep their entries.
``scope`` of an agent memory is ``user``, ``project:<hash>`` or ``local:<hash>`` (see
:mod:`agentscope_teams.subagents.memory`). ``expiry14`` is a lease expiry in milliseconds since the epoch, so the in-progress index lists the
earliest expiry first. The team id ``"_index"`` is reserved. Each family is a :class:`Family` in
:data:`FAMILIES`; the typed builders (:class:`SessionAddress`, :class:`RunKeys`,
:class:`TeamKeys`, the token and directory functions) are the only code that makes these tuples.
"""

from __future__ import annotations

from ..store.base import Key
from ._a2a import (
    a2a_events_key,
    a2a_every_task_prefix,
    a2a_push_key,
    a2a_push_prefix,
    a2a_remote_key,
    a2a_task_key,
    a2a_task_of,
    a2a_tasks_prefix,
)
from ._family import (
    A2A_EVENTS,
    A2A_PUSH,
    A2A_REMOTE,
    A2A_TASK,
    AGENT_MEMORY,
    DIRECTORY_SIGNAL,
    EVENT_LOG,
    FAMILIES,
    HELD_TASK,
    INBOX_CURSOR,
    MEMBER_INBOX,
    MEMBER_LEASE,
    OPEN_TASK,
    OWNED_TASK,
    PARKED_RUNTIME,
    PENDING_TASK,
    REGISTRY_SEGMENT,
    RUN,
    RUN_INBOX,
    RUN_INBOX_ACK,
    RUN_LEASE,
    RUN_MAIL,
    RUN_MAIL_ACK,
    SESSION,
    SESSION_LEASE,
    TASK,
    TASK_SEQ,
    TEAM,
    TEAM_INDEX,
    TEAM_RUNTIME,
    TEAM_SIGNAL,
    TOKEN,
    TOKEN_INDEX,
    Family,
    family_of,
    group_of,
    parse,
    slot_groups,
)
from ._memory import agent_memory_key
from ._run import RunKeys, StreamKeys, user_runs_prefix
from ._session import SessionAddress, sessions_prefix
from ._team import (
    Numbered,
    TeamKeys,
    directory_key,
    directory_prefix,
    directory_signal,
    team_id_of,
    team_index_key,
    team_index_prefix,
)
from ._token import token_digest_of, token_index_key, token_index_prefix, token_key


def address_of(key: Key) -> Key:
    """``key`` without its family literal: the ids it addresses, for messages."""
    return key[1:]


__all__ = [
    "A2A_EVENTS",
    "A2A_PUSH",
    "A2A_REMOTE",
    "A2A_TASK",
    "slot_groups",
    "AGENT_MEMORY",
    "DIRECTORY_SIGNAL",
    "FAMILIES",
    "HELD_TASK",
    "EVENT_LOG",
    "INBOX_CURSOR",
    "MEMBER_INBOX",
    "MEMBER_LEASE",
    "OPEN_TASK",
    "OWNED_TASK",
    "PARKED_RUNTIME",
    "PENDING_TASK",
    "REGISTRY_SEGMENT",
    "RUN",
    "RUN_INBOX",
    "RUN_INBOX_ACK",
    "RUN_LEASE",
    "RUN_MAIL",
    "RUN_MAIL_ACK",
    "SESSION",
    "SESSION_LEASE",
    "TASK",
    "TASK_SEQ",
    "TEAM",
    "TEAM_INDEX",
    "TEAM_RUNTIME",
    "TEAM_SIGNAL",
    "TOKEN",
    "TOKEN_INDEX",
    "Family",
    "Numbered",
    "RunKeys",
    "SessionAddress",
    "StreamKeys",
    "TeamKeys",
    "address_of",
    "a2a_events_key",
    "a2a_push_key",
    "a2a_push_prefix",
    "a2a_remote_key",
    "a2a_every_task_prefix",
    "a2a_task_key",
    "a2a_task_of",
    "a2a_tasks_prefix",
    "agent_memory_key",
    "directory_key",
    "directory_prefix",
    "directory_signal",
    "family_of",
    "group_of",
    "parse",
    "sessions_prefix",
    "team_id_of",
    "team_index_key",
    "team_index_prefix",
    "token_digest_of",
    "token_index_key",
    "token_index_prefix",
    "token_key",
    "user_runs_prefix",
]
