"""Key families: the declaration of every logical key layout, and the generic parser over them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..context import validate_identifier
from ..store.base import Key

#: The segment of the per-user team registry (``list_teams``); no team may have this id.
REGISTRY_SEGMENT = "_index"
#: Placeholders whose segment carries a type prefix (see :mod:`agentscope_teams.context`).
TYPED = {"org": "o:", "user": "u:", "agent": "a:", "session": "s:"}
SEQ_WIDTH = 12
#: Digits of a lease expiry in milliseconds since the epoch (until the year 5138).
EXPIRY_WIDTH = 14


@dataclass(frozen=True, slots=True)
class Family:
    """One key layout: ``(literal, *shape)``, where a shape segment is a word or a ``{placeholder}``.

    ``group`` is how many leading segments (the literal included) group its keys: every key with
    the same group prefix must live in one Redis Cluster hash slot. ``stream`` families name store
    streams (``append`` / ``read``), not keys.
    """

    name: str
    literal: str
    shape: tuple[str, ...]
    group: int
    stream: bool = False
    about: str = ""
    _slots: tuple[int, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        slots = tuple(i for i, s in enumerate(self.shape) if s.startswith("{"))
        object.__setattr__(self, "_slots", slots)

    @property
    def fields(self) -> tuple[str, ...]:
        """The placeholder names, in order."""
        return tuple(self.shape[i][1:-1] for i in self._slots)

    def key(self, *values: str) -> Key:
        """The key with ``values`` in its placeholders (values are already typed segments)."""
        if len(values) != len(self._slots):
            raise ValueError(f"{self.name} keys take {len(self._slots)} values, got {len(values)}")
        segments = list(self.shape)
        for i, value in zip(self._slots, values, strict=True):
            segments[i] = value
        return (self.literal, *segments)

    def prefix(self, *values: str) -> Key:
        """The prefix holding the first ``len(values)`` placeholders and the words after them."""
        out, given = [self.literal], iter(values)
        for segment in self.shape:
            if segment.startswith("{"):
                value = next(given, None)
                if value is None:
                    break
                segment = value
            out.append(segment)
        return tuple(out)

    def match(self, key: Key) -> dict[str, str] | None:
        """The placeholder values of ``key`` (raw segments), or None if it is not of this family."""
        if len(key) != len(self.shape) + 1 or key[0] != self.literal:
            return None
        found: dict[str, str] = {}
        for pattern, segment in zip(self.shape, key[1:], strict=True):
            if not pattern.startswith("{"):
                if segment != pattern:
                    return None
                continue
            name = pattern[1:-1]
            if not _fits(name, segment):
                return None
            found[name] = segment
        return found


def _fits(name: str, segment: str) -> bool:
    typed = TYPED.get(name)
    if typed is not None:
        return segment.startswith(typed) and (name in ("org", "user") or len(segment) > 2)
    if name == "team":
        return segment != REGISTRY_SEGMENT
    if name == "seq":
        return len(segment) == SEQ_WIDTH and segment.isdigit()
    if name == "expiry":
        return len(segment) == EXPIRY_WIDTH and segment.isdigit()
    return True


def typed(name: str, value: str) -> str:
    """The typed segment of an agent or session id (validated)."""
    return TYPED[name] + validate_identifier(value, f"{name}_id")


def untyped(segment: str, name: str) -> str | None:
    """The id in a typed segment (``"o:"`` / ``"u:"`` alone: None)."""
    prefix = TYPED[name]
    if not segment.startswith(prefix):
        raise ValueError(f"{segment!r} is not a {name} segment (it must start with {prefix!r})")
    return segment[len(prefix) :] or None


_O, _U, _A, _S, _T = "{org}", "{user}", "{agent}", "{session}", "{team}"

# fmt: off
SESSION = Family("session", "sessions", (_O, _U, _A, _S), 3, about="a session record")
SESSION_LEASE = Family("session-lease", "leases", (_O, _U, _A, _S), 3,
                       about="the lease of the process running a call of the session")
RUN = Family("run", "subagents", (_O, _U, _S, "{run}"), 3,
             about="a subagent RunRecord of a parent session")
RUN_LEASE = Family("run-lease", "subagent-leases", (_O, _U, _S, "{run}"), 3,
                   about="the lease of the process executing a run")
RUN_INBOX = Family("run-inbox", "subagent-inbox", (_O, _U, _A, _S), 3, stream=True,
                   about="run notices for the parent agent's session")
RUN_INBOX_ACK = Family("run-inbox-ack", "subagent-inbox-ack", (_O, _U, _A, _S), 3,
                       about="the acknowledged cursor of a run inbox")
RUN_MAIL = Family("run-mail", "subagent-mail", (_O, _U, _S, "{run}"), 3, stream=True,
                  about="agent_send messages queued for a running child")
RUN_MAIL_ACK = Family("run-mail-ack", "subagent-mail-ack", (_O, _U, _S, "{run}"), 3,
                      about="the acknowledged cursor of a run's mail")
AGENT_MEMORY = Family("agent-memory", "agent-memory", (_O, _U, "{scope}", _A), 3,
                      about="a subagent's persistent memory (memory: user/project/local)")
A2A_TASK = Family("a2a-task", "a2a-tasks", (_O, _U, _A, "{a2a_task}"), 3,
                  about="an A2A task record (the a2a_server's TaskStore) of an exposed agent")
A2A_PUSH = Family("a2a-push", "a2a-push", (_A, "{a2a_task}", "{push}"), 3,
                  about="one push-notification config of an A2A task (the owner is in it)")
A2A_EVENTS = Family("a2a-events", "a2a-events", (_A, "{a2a_task}"), 3, stream=True,
                    about="the stream events of a running A2A task (resubscribe in any process)")
A2A_REMOTE = Family("a2a-remote", "a2a-remote", (_O, _U, _A, _S), 3,
                    about="a session's conversation with a remote A2A agent (its context and task)")
TEAM_INDEX = Family("team-index", "teams", (_O, _U, REGISTRY_SEGMENT, _T), 4,
                    about="a user's registry of teams (list_teams); grouped per user")
TEAM = Family("team", "teams", (_O, _U, _T, "team"), 4, about="the Team record")
TASK = Family("task", "teams", (_O, _U, _T, "task", "{task}"), 4, about="one Task record")
TASK_SEQ = Family("task-seq", "teams", (_O, _U, _T, "task-seq"), 4, stream=True,
                  about="allocates task numbers (t-<seq>)")
PENDING_TASK = Family("pending-task", "teams", (_O, _U, _T, "open", "{seq}", "{task}"), 4,
                      about="pending index entry (a claim candidate), seq zero-padded to 12 digits")
OPEN_TASK = PENDING_TASK  # its name before in-progress tasks moved to HELD_TASK; same layout
HELD_TASK = Family("held-task", "teams", (_O, _U, _T, "held", "{expiry}", "{task}"), 4,
                   about="in-progress index entry by lease expiry (ms, 14 digits, <= the real one)")
OWNED_TASK = Family("owned-task", "teams", (_O, _U, _T, "owned", "{member}", "{seq}", "{task}"), 4,
                    about="a member's in-progress tasks (claim_next's prefer_own)")
MEMBER_INBOX = Family("member-inbox", "teams", (_O, _U, _T, "inbox", "{member}"), 4, stream=True,
                      about="a member's mailbox")
INBOX_CURSOR = Family("inbox-cursor", "teams", (_O, _U, _T, "cursor", "{member}"), 4,
                      about="a member's acknowledged mailbox cursor")
EVENT_LOG = Family("event-log", "teams", (_O, _U, _T, "events", "{stream}", "{chunk}"), 4,
                  about="what one event stream sent, a chunk at a time (resuming; expires)")
MEMBER_LEASE = Family("member-lease", "team-member-lease", (_O, _U, _T, "{member}"), 4,
                      about="the lease of the process running a member (runtime slot)")
TEAM_SIGNAL = Family("team-signal", "teams", (_O, _U, _T, "signal"), 4,
                     about="the team's wake-up channel (store signals; never written as an entry)")
TEAM_RUNTIME = Family("team-runtime", "team-runtime", (_O, _U, _T), 4,
                      about="the directory record telling workers how to serve a team")
PARKED_RUNTIME = Family("team-parked", "teams", (_O, _U, _T, "runtime"), 4,
                        about="the directory record of a team that ended, kept to serve it again")
DIRECTORY_SIGNAL = Family("teams-signal", "team-directory", ("signal",), 2,
                          about="wakes workers when a team record is written (store signals; never an entry)")
TOKEN = Family("token", "tokens", ("{digest}",), 2, about="a control-plane token, by SHA-256")
TOKEN_INDEX = Family("token-index", "token-index", (_O, _U, _T, "{member}", "{digest}"), 4,
                     about="member and stream tokens of a team (revocation)")

#: Every key family, in the order of the table in :mod:`agentscope_teams.keys`.
FAMILIES: tuple[Family, ...] = (
    SESSION, SESSION_LEASE, RUN, RUN_LEASE, RUN_INBOX, RUN_INBOX_ACK, RUN_MAIL, RUN_MAIL_ACK,
    AGENT_MEMORY, A2A_TASK, A2A_PUSH, A2A_EVENTS, A2A_REMOTE, TEAM_INDEX, TEAM, TASK, TASK_SEQ, PENDING_TASK, HELD_TASK, OWNED_TASK, MEMBER_INBOX, INBOX_CURSOR, EVENT_LOG,
    MEMBER_LEASE, TEAM_SIGNAL, TEAM_RUNTIME, PARKED_RUNTIME, DIRECTORY_SIGNAL, TOKEN, TOKEN_INDEX,
)
# fmt: on


def _group_sizes() -> dict[str, int]:
    """Group size per literal (families sharing a literal must share it: group_of reads only that)."""
    sizes: dict[str, int] = {}
    for family in FAMILIES:
        if sizes.setdefault(family.literal, family.group) != family.group:
            raise AssertionError(f"families under {family.literal!r} must share one group size")
    return sizes


_GROUPS = _group_sizes()


def slot_groups() -> dict[str, int]:
    """The group size of each key literal: what a Redis Cluster store hashes together.

    :class:`~agentscope_teams.store.redis.RedisStore` takes it as ``key_groups``; by default it
    loads it at construction through the ``agentscope_teams.key_groups`` entry point.
    """
    return dict(_GROUPS)


def family_of(key: Key) -> Family | None:
    """The family ``key`` belongs to, or None."""
    for family in FAMILIES:
        if family.match(key) is not None:
            return family
    return None


def parse(key: Key) -> tuple[Family, dict[str, str]]:
    """The family of ``key`` and its placeholder values; ``ValueError`` for an unknown key."""
    for family in FAMILIES:
        found = family.match(key)
        if found is not None:
            return family, found
    raise ValueError(f"{key!r} is not a key of any family in agentscope_teams.keys")


def parse_as(family: Family, key: Key) -> dict[str, str]:
    """The placeholder values of ``key``; ``ValueError`` unless it is a ``family`` key."""
    found = family.match(key)
    if found is None:
        raise ValueError(
            f"{key!r} is not a {family.name} key ({family.literal!r}, *{family.shape})"
        )
    return found


def group_of(key: Key) -> Key:
    """The grouping prefix of ``key`` (every key sharing it must share a Redis Cluster hash slot).

    It reads only the leading literal, so it is cheap and also accepts a prefix that reaches the
    group. ``ValueError`` for an unknown literal or a prefix shorter than its group.
    """
    size = _GROUPS.get(key[0]) if key else None
    if size is None:
        known = ", ".join(sorted(_GROUPS))
        raise ValueError(f"{key!r} is not in a known key family; the known literals are {known}")
    if len(key) < size:
        raise ValueError(
            f"{key!r} is shorter than its group ({size} segments): it spans several groups"
        )
    return key[:size]
