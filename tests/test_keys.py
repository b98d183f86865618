"""The key registry: every family's persisted layout, its parsing, its group, and that nobody else
builds or slices keys."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentscope_teams import RuntimeContext
from agentscope_teams import keys as k
from agentscope_teams.keys import Family, RunKeys, SessionAddress, TeamKeys
from agentscope_teams.store.base import Key

from .keyscan import PACKAGE, scan

OWNER = ("o:acme", "u:alice")
RUNS = RunKeys(("o:acme", "u:alice", "s:s1"))
TEAM = TeamKeys(OWNER, "team-1")
SESSION = SessionAddress("acme", "alice", "lead", "s1")


class _Task:
    id, seq = "t-7", 7


EXPIRES = datetime(2026, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)


# (family, key built by the registry's typed API, the persisted tuple it must stay, its group)
CASES: list[tuple[Family, Key, Key, Key]] = [
    (k.SESSION, SESSION.key, ("sessions", *OWNER, "a:lead", "s:s1"), ("sessions", *OWNER)),
    (k.SESSION_LEASE, SESSION.lease_key, ("leases", *OWNER, "a:lead", "s:s1"), ("leases", *OWNER)),
    (k.RUN, RUNS.run("r-1"), ("subagents", *OWNER, "s:s1", "r-1"), ("subagents", *OWNER)),
    (
        k.RUN_LEASE,
        RUNS.lease("r-1"),
        ("subagent-leases", *OWNER, "s:s1", "r-1"),
        ("subagent-leases", *OWNER),
    ),
    (
        k.RUN_INBOX,
        RUNS.inbox("lead").stream,
        ("subagent-inbox", *OWNER, "a:lead", "s:s1"),
        ("subagent-inbox", *OWNER),
    ),
    (
        k.RUN_INBOX_ACK,
        RUNS.inbox("lead").cursor,
        ("subagent-inbox-ack", *OWNER, "a:lead", "s:s1"),
        ("subagent-inbox-ack", *OWNER),
    ),
    (
        k.RUN_MAIL,
        RUNS.mail("r-1").stream,
        ("subagent-mail", *OWNER, "s:s1", "r-1"),
        ("subagent-mail", *OWNER),
    ),
    (
        k.RUN_MAIL_ACK,
        RUNS.mail("r-1").cursor,
        ("subagent-mail-ack", *OWNER, "s:s1", "r-1"),
        ("subagent-mail-ack", *OWNER),
    ),
    (
        k.AGENT_MEMORY,
        k.agent_memory_key("acme", "alice", "user", "reviewer"),
        ("agent-memory", *OWNER, "user", "a:reviewer"),
        ("agent-memory", *OWNER),
    ),
    (
        k.A2A_TASK,
        k.a2a_task_key("acme", "alice", "lead", "task-1"),
        ("a2a-tasks", *OWNER, "a:lead", "task-1"),
        ("a2a-tasks", *OWNER),
    ),
    (
        k.A2A_PUSH,
        k.a2a_push_key("lead", "task-1", "p1"),
        ("a2a-push", "a:lead", "task-1", "p1"),
        ("a2a-push", "a:lead", "task-1"),
    ),
    (
        k.A2A_EVENTS,
        k.a2a_events_key("lead", "task-1"),
        ("a2a-events", "a:lead", "task-1"),
        ("a2a-events", "a:lead", "task-1"),
    ),
    (
        k.A2A_REMOTE,
        k.a2a_remote_key("acme", "alice", "remote", "s1"),
        ("a2a-remote", *OWNER, "a:remote", "s:s1"),
        ("a2a-remote", *OWNER),
    ),
    (
        k.TEAM_INDEX,
        TEAM.index(),
        ("teams", *OWNER, "_index", "team-1"),
        ("teams", *OWNER, "_index"),
    ),
    (k.TEAM, TEAM.team(), ("teams", *OWNER, "team-1", "team"), ("teams", *OWNER, "team-1")),
    (
        k.TASK,
        TEAM.task("t-7"),
        ("teams", *OWNER, "team-1", "task", "t-7"),
        ("teams", *OWNER, "team-1"),
    ),
    (
        k.TASK_SEQ,
        TEAM.task_seq(),
        ("teams", *OWNER, "team-1", "task-seq"),
        ("teams", *OWNER, "team-1"),
    ),
    (
        k.PENDING_TASK,
        TEAM.open(_Task()),
        ("teams", *OWNER, "team-1", "open", "000000000007", "t-7"),
        ("teams", *OWNER, "team-1"),
    ),
    (
        k.HELD_TASK,
        TEAM.held("t-7", EXPIRES),
        ("teams", *OWNER, "team-1", "held", "01767225600123", "t-7"),
        ("teams", *OWNER, "team-1"),
    ),
    (
        k.OWNED_TASK,
        TEAM.owned("bob", _Task()),
        ("teams", *OWNER, "team-1", "owned", "bob", "000000000007", "t-7"),
        ("teams", *OWNER, "team-1"),
    ),
    (
        k.MEMBER_INBOX,
        TEAM.inbox("bob"),
        ("teams", *OWNER, "team-1", "inbox", "bob"),
        ("teams", *OWNER, "team-1"),
    ),
    (
        k.INBOX_CURSOR,
        TEAM.cursor("bob"),
        ("teams", *OWNER, "team-1", "cursor", "bob"),
        ("teams", *OWNER, "team-1"),
    ),
    (
        k.EVENT_LOG,
        TEAM.event_log("f00d", 3),
        ("teams", *OWNER, "team-1", "events", "f00d", "000000000003"),
        ("teams", *OWNER, "team-1"),
    ),
    (
        k.MEMBER_LEASE,
        TEAM.member_lease("bob"),
        ("team-member-lease", *OWNER, "team-1", "bob"),
        ("team-member-lease", *OWNER, "team-1"),
    ),
    (
        k.TEAM_SIGNAL,
        TEAM.signal(),
        ("teams", *OWNER, "team-1", "signal"),
        ("teams", *OWNER, "team-1"),
    ),
    (
        k.TEAM_RUNTIME,
        TEAM.directory(),
        ("team-runtime", *OWNER, "team-1"),
        ("team-runtime", *OWNER, "team-1"),
    ),
    (
        k.PARKED_RUNTIME,
        TEAM.parked_directory(),
        ("teams", *OWNER, "team-1", "runtime"),
        ("teams", *OWNER, "team-1"),
    ),
    (
        k.DIRECTORY_SIGNAL,
        k.directory_signal(),
        ("team-directory", "signal"),
        ("team-directory", "signal"),
    ),
    (k.TOKEN, k.token_key("ab12"), ("tokens", "ab12"), ("tokens", "ab12")),
    (
        k.TOKEN_INDEX,
        k.token_index_key("acme", "alice", "team-1", "bob", "ab12"),
        ("token-index", *OWNER, "team-1", "bob", "ab12"),
        ("token-index", *OWNER, "team-1"),
    ),
]
IDS = [case[0].name for case in CASES]


def test_every_family_has_a_case() -> None:
    assert [case[0] for case in CASES] == list(k.FAMILIES)
    assert len({f.name for f in k.FAMILIES}) == len(k.FAMILIES)


@pytest.mark.parametrize(("family", "built", "persisted", "group"), CASES, ids=IDS)
def test_layout_is_unchanged_and_round_trips(
    family: Family, built: Key, persisted: Key, group: Key
) -> None:
    assert built == persisted  # existing stores keep working
    found, values = k.parse(built)
    assert found is family
    assert k.family_of(built) is family
    assert tuple(values) == family.fields
    assert family.key(*values.values()) == built


@pytest.mark.parametrize(("family", "built", "persisted", "group"), CASES, ids=IDS)
def test_group_of_every_family(family: Family, built: Key, persisted: Key, group: Key) -> None:
    assert k.group_of(built) == group
    assert len(group) == family.group
    assert k.group_of(group) == group  # a prefix that reaches the group is in it


def test_the_docstring_table_matches_the_families() -> None:
    assert k.__doc__ is not None
    rows = {
        cols[0]: cols[1:]
        for line in k.__doc__.splitlines()
        if len(cols := re.split(r"\s{2,}", line.strip())) == 3
    }
    for family in k.FAMILIES:
        layout, group = rows[family.name]
        assert layout.removeprefix("stream ").startswith(f'("{family.literal}"')
        assert layout.startswith("stream ") == family.stream
        assert layout.count(",") == len(family.shape)
        assert group.count(",") + 1 == family.group


def test_group_of_refuses_unknown_families_and_short_prefixes() -> None:
    with pytest.raises(ValueError, match="not in a known key family"):
        k.group_of(("nope", "x"))
    with pytest.raises(ValueError, match="spans several groups"):
        k.group_of(("teams", "o:acme", "u:alice"))
    with pytest.raises(ValueError, match="not a key of any family"):
        k.parse(("teams", *OWNER, "team-1", "unknown"))


def test_session_address() -> None:
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
    addr = SessionAddress.of(ctx, "lead")
    assert addr == SESSION
    assert SessionAddress.parse(addr.key) == addr
    anonymous = SessionAddress(None, None, "lead", "a:b")
    assert anonymous.key == ("sessions", "o:", "u:", "a:lead", "s:a:b")
    assert SessionAddress.parse(anonymous.key) == anonymous
    with pytest.raises(ValueError, match="not a session key"):
        SessionAddress.parse(anonymous.lease_key)
    with pytest.raises(ValueError, match="agent_id"):
        SessionAddress("acme", "alice", "", "s1")
    with pytest.raises(ValueError, match="session_id"):
        SessionAddress("acme", "alice", "lead", " s1")
    assert k.sessions_prefix("acme", "alice") == ("sessions", *OWNER)
    assert k.sessions_prefix(None, "alice", "lead") == ("sessions", "o:", "u:alice", "a:lead")


def test_run_keys_parse() -> None:
    ctx = RuntimeContext(session_id="s1", user_id="alice", org_id="acme")
    assert RunKeys.for_ctx(ctx) == RUNS
    assert RunKeys.parse(RUNS.run("r-1")) == (RUNS, "r-1")
    assert RUNS.session_id == "s1"
    assert RUNS.prefix() == ("subagents", *OWNER, "s:s1")
    assert k.user_runs_prefix("acme", "alice") == ("subagents", *OWNER)
    with pytest.raises(ValueError, match="not a run key"):
        RunKeys.parse(RUNS.lease("r-1"))


def test_team_keys_parse() -> None:
    assert TEAM.task_id_of(TEAM.task("t-7")) == "t-7"
    assert TEAM.task_id_of(TEAM.open(_Task())) == "t-7"
    other = TeamKeys(OWNER, "team-2")
    with pytest.raises(ValueError, match="team-1"):
        TEAM.task_id_of(other.task("t-7"))
    with pytest.raises(ValueError):
        TEAM.task_id_of(TEAM.cursor("bob"))
    assert TEAM.base == ("teams", *OWNER, "team-1")
    assert TEAM.tasks_prefix() == (*TEAM.base, "task")
    assert TEAM.open_prefix() == (*TEAM.base, "open")
    assert k.OPEN_TASK is k.PENDING_TASK  # the old name of the pending index
    assert TEAM.task_id_of(TEAM.held("t-7", EXPIRES)) == "t-7"
    assert TEAM.task_id_of(TEAM.owned("bob", _Task())) == "t-7"
    assert TEAM.expiry_of(TEAM.held("t-7", EXPIRES)) == EXPIRES.replace(microsecond=123000)
    assert TEAM.held_prefix() == (*TEAM.base, "held")
    assert TEAM.owned_prefix("bob") == (*TEAM.base, "owned", "bob")
    assert k.team_index_prefix(OWNER) == ("teams", *OWNER, "_index")
    assert k.team_id_of(TEAM.index()) == "team-1"
    # an index entry of a team named like a team-record word is still an index entry
    assert k.family_of(TeamKeys(OWNER, "team").index()) is k.TEAM_INDEX


def test_directory_and_token_prefixes() -> None:
    ctx = RuntimeContext(session_id="x", user_id="alice", org_id="acme")
    assert k.directory_key(ctx, "team-1") == TEAM.directory()
    assert k.directory_prefix() == ("team-runtime",)
    assert k.directory_prefix(None, any_org=False) == ("team-runtime", "o:")
    assert k.token_index_prefix("acme", "alice", "team-1") == ("token-index", *OWNER, "team-1")
    assert k.token_index_prefix("acme", "alice", "team-1", "bob")[-1] == "bob"
    assert k.token_digest_of(k.token_index_key("acme", "alice", "team-1", "bob", "ff")) == "ff"


def test_no_module_outside_the_registry_builds_or_slices_keys() -> None:
    found = [f"{p}:{line}: {what}" for p, line, what in scan(PACKAGE)]
    assert not found, "build or parse keys with agentscope_teams.keys:\n" + "\n".join(found)


SNIPPETS = {
    "literal.py": 'def f(o, u):\n    return ("sessions", o, u)\n',
    "constant.py": 'PREFIX = "team-runtime"\n\ndef f(o):\n    return (PREFIX, o)\n',
    "unpacked.py": 'RUNS, LEASES = "subagents", "subagent-leases"\n',
    "concat.py": 'def f(kind, s):\n    return (kind + "-ack", s)\n',
    "call.py": 'def f(store, s):\n    return Inbox.of(store, "subagent-mail", s)\n',
    "typed.py": 'def f(agent):\n    return "a:" + agent\n',
    "fstring.py": 'def f(sid):\n    return f"s:{sid}"\n',
    "strip.py": 'def f(seg):\n    return seg.removeprefix("s:")\n',
    "slice.py": "def f(key):\n    return key[-1]\n",
    "attr.py": "def f(lease):\n    return lease.key[1:]\n",
    "length.py": "def f(k):\n    return len(k) == 5\n",
}


def test_the_scan_finds_every_pattern(tmp_path: Path) -> None:
    for name, text in SNIPPETS.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "clean.py").write_text(
        'NAME = "subagents"\n\ndef f(keys, page):\n'
        '    d = {}\n    d.setdefault("subagents", [])\n    return keys[-1], page[0], ("x", 1)\n'
    )
    assert sorted({path for path, _, _ in scan(tmp_path)}) == sorted(SNIPPETS)
