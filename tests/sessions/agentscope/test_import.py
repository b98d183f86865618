"""Import sessions written by the real AgentScope 2.0.11 (its RedisStorage and SQL storage)."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from agentscope_teams.agentscope_import import import_agentscope_sessions
from agentscope_teams.errors import ConfigurationError
from agentscope_teams.sessions import SessionStorage
from agentscope_teams.store import StoreBackend

from ...backends import MYSQL_URL, POSTGRES_URL, REDIS_URL
from ...conftest import require_service
from .anchor import write_sessions
from .expectations import CONVERTED, REFUSED, check_imported


def _redis_source(python: Path, user: str) -> tuple[str, dict[str, Any]]:
    require_service("redis")
    parts = urlsplit(REDIS_URL)
    db = (parts.path or "/0").strip("/") or "0"
    prefix = f"astest-{user}"
    written = write_sessions(
        python, user, "redis", parts.hostname or "127.0.0.1", str(parts.port or 6379), db, prefix
    )
    return f"{REDIS_URL}?prefix={prefix}", written


@pytest.fixture(scope="module")
def redis_source(agentscope_python: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """AgentScope's sessions of a fresh user in Redis, under a key prefix of their own."""
    import redis

    user = "as-" + uuid.uuid4().hex[:10]
    url, written = _redis_source(agentscope_python, user)
    try:
        yield user, url, written
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        for name in client.scan_iter(match=f"astest-{user}:*"):
            client.delete(name)
        client.close()


def _outcomes(report: Any) -> dict[str, str]:
    return {s.session_id: s.outcome for s in report.sessions}


async def test_redis_sessions_import_into_every_backend(
    redis_source: tuple[str, str, dict[str, Any]], store: StoreBackend, ns: str
) -> None:
    user, url, written = redis_source
    storage = SessionStorage(store)
    report = await import_agentscope_sessions(url, storage, org_id=ns)
    assert report.counts() == {"created": 4, "updated": 0, "unchanged": 0, "refused": 2}
    reasons = {s.session_id: s.reason or "" for s in report.sessions if s.outcome == "refused"}
    assert {k[2:]: v for k, v in reasons.items()}.keys() == REFUSED.keys()
    for name, words in REFUSED.items():
        assert words in reasons[f"s-{name}"]
    await check_imported(SessionStorage(store), user, ns, written)

    versions = {r.id: r.version for r in await storage.list_sessions(user, org_id=ns)}
    again = await import_agentscope_sessions(url, SessionStorage(store), org_id=ns)
    assert set(_outcomes(again).values()) == {"unchanged", "refused"}
    assert {r.id: r.version for r in await storage.list_sessions(user, org_id=ns)} == versions


async def test_dry_run_writes_nothing(
    redis_source: tuple[str, str, dict[str, Any]], tmp_path: Path
) -> None:
    from agentscope_teams.store import store_from_url

    user, url, _ = redis_source
    async with store_from_url(f"sqlite:///{tmp_path / 'x.db'}") as store:
        storage = SessionStorage(store)
        report = await import_agentscope_sessions(url, storage, dry_run=True)
        assert report.dry_run and report.counts()["created"] == len(CONVERTED)
        assert await storage.list_sessions(user) == []


async def test_sqlite_sessions_import_and_source_changes_update(
    agentscope_python: Path, tmp_path: Path
) -> None:
    from agentscope_teams.store import store_from_url

    db = tmp_path / "agentscope.db"
    written = write_sessions(agentscope_python, "alice", "sql", f"sqlite+aiosqlite:///{db}")
    async with store_from_url("memory://") as store:
        storage = SessionStorage(store)
        report = await import_agentscope_sessions(f"sqlite:///{db}", storage)
        assert report.counts() == {"created": 4, "updated": 0, "unchanged": 0, "refused": 2}
        await check_imported(storage, "alice", None, written)
        # AgentScope writes the same sessions again (new timestamps): each converted one updates.
        rewritten = write_sessions(agentscope_python, "alice", "sql", f"sqlite+aiosqlite:///{db}")
        report = await import_agentscope_sessions(f"sqlite:///{db}", storage)
        assert report.counts() == {"created": 0, "updated": 4, "unchanged": 0, "refused": 2}
        await check_imported(storage, "alice", None, rewritten)
        await _agent_resumes(store, tmp_path)


async def _agent_resumes(store: StoreBackend, tmp_path: Path) -> None:
    """Our agent continues the imported tool session: the model sees the converted history."""
    from agentscope_teams import HarnessAgent, RuntimeContext
    from agentscope_teams.model import ScriptedModel

    model = ScriptedModel(["Anything else?"])
    agent = HarnessAgent(
        "coder", model, store=store, builtin_tools=False, workspace=tmp_path / "ws"
    )
    reply = await agent.call("thanks", RuntimeContext(session_id="s-tools", user_id="alice"))
    assert reply.get_text_content() == "Anything else?"
    seen = [(m.role, [b.type for b in m.blocks]) for m in model.requests[0].messages]
    assert seen[-7:] == [
        ("user", ["text"]),
        ("assistant", ["text", "tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["tool_use"]),
        ("user", ["tool_result"]),
        ("assistant", ["text"]),
        ("user", ["text"]),
    ]
    record = await SessionStorage(store).get_session("alice", "coder", "s-tools")
    assert record is not None and record.state.context[-1].get_text_content() == "Anything else?"
    assert record.team_id == "team-7"  # the agent's own writes keep what the import set


@pytest.fixture
def postgres_database() -> Iterator[str]:
    """A database of its own on the PostgreSQL server (AgentScope creates its tables in it)."""
    require_service("postgres")
    name = "ast_asimport_" + uuid.uuid4().hex[:10]
    admin = POSTGRES_URL

    def psql(sql: str) -> None:
        subprocess.run(["psql", admin, "-qc", sql], check=True, capture_output=True, timeout=60)

    psql(f"CREATE DATABASE {name}")
    try:
        yield urlsplit(admin)._replace(path="/" + name).geturl()
    finally:
        psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


async def test_postgres_sessions_import(agentscope_python: Path, postgres_database: str) -> None:
    await _sql_import(agentscope_python, "bob", postgres_database, "postgresql+asyncpg")


async def _sql_import(python: Path, user: str, url: str, async_scheme: str) -> None:
    """AgentScope writes ``user``'s sessions at ``url`` (through ``async_scheme``, its SQLAlchemy
    driver); they import as they do from every source."""
    from agentscope_teams.store import store_from_url

    written = write_sessions(python, user, "sql", async_scheme + url[url.index(":") :])
    async with store_from_url("memory://") as store:
        storage = SessionStorage(store)
        report = await import_agentscope_sessions(url, storage)
        assert report.counts() == {"created": 4, "updated": 0, "unchanged": 0, "refused": 2}
        await check_imported(storage, user, None, written)


@pytest.fixture
def mysql_database() -> Iterator[str]:
    """A database of its own on the MariaDB server (AgentScope creates its tables in it)."""
    require_service("mariadb")
    name = "ast_asimport_" + uuid.uuid4().hex[:10]
    admin = urlsplit(MYSQL_URL)
    login = ["mysql", "-h", admin.hostname or "127.0.0.1", "-P", str(admin.port or 3306)]
    login += ["-u", admin.username or "root"] + ([f"-p{admin.password}"] if admin.password else [])

    def mysql(sql: str) -> None:
        subprocess.run([*login, "-e", sql], check=True, capture_output=True, timeout=60)

    mysql(f"CREATE DATABASE {name}")
    try:
        yield admin._replace(path="/" + name).geturl()
    finally:
        mysql(f"DROP DATABASE IF EXISTS {name}")


async def test_mysql_sessions_import(agentscope_python: Path, mysql_database: str) -> None:
    await _sql_import(agentscope_python, "carol", mysql_database, "mysql+aiomysql")


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://host/x", "not an AgentScope storage URL"),
        ("sqlite:////nowhere/agentscope.db", "no SQLite database file"),
        ("redis://127.0.0.1:1/0", "cannot read AgentScope sessions"),
        ("sqlite:///{tmp}/empty.db?table=bad-name", "not a table name"),
        ("sqlite:///{tmp}/empty.db", "cannot read AgentScope sessions"),  # no sessions table
    ],
)
async def test_bad_source_url_is_a_clear_error(url: str, words: str, tmp_path: Path) -> None:
    from agentscope_teams.store import store_from_url

    (tmp_path / "empty.db").write_bytes(b"")
    async with store_from_url("memory://") as store:
        with pytest.raises(ConfigurationError, match=words):
            await import_agentscope_sessions(url.format(tmp=tmp_path), SessionStorage(store))


def _hand_written(prefix: str, records: dict[str, dict[str, Any]]) -> str:
    """Write ``records`` (session id -> AgentScope JSON) under ``prefix`` in Redis; the source URL."""
    import json

    import redis

    require_service("redis")
    client = redis.Redis.from_url(REDIS_URL)
    for sid, record in records.items():
        client.set(f"{prefix}:user:{record['user_id']}:session:{sid}", json.dumps(record))
    client.close()
    return f"{REDIS_URL}?prefix={prefix}"


def _drop(prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(REDIS_URL)
    for name in client.scan_iter(match=f"{prefix}:*"):
        client.delete(name)
    client.close()


def _minimal(sid: str, **state: Any) -> dict[str, Any]:
    now = "2026-01-02T03:04:05+00:00"
    return {"id": sid, "user_id": "u", "agent_id": "a", "created_at": now, "updated_at": now,
            "config": {}, "state": state}  # fmt: skip


async def test_malformed_record_is_refused_by_name_and_the_others_import() -> None:
    from agentscope_teams.store import store_from_url

    prefix = "astest-malformed-" + uuid.uuid4().hex[:8]
    bad = {"tasks_context": {"tasks": [{"subject": "no id"}]}}
    url = _hand_written(prefix, {"good": _minimal("good"), "bad": _minimal("bad", **bad)})
    try:
        async with store_from_url("memory://") as store:
            report = await import_agentscope_sessions(url, SessionStorage(store))
    finally:
        _drop(prefix)
    assert _outcomes(report) == {"bad": "refused", "good": "created"}
    (refused,) = [s for s in report.sessions if s.outcome == "refused"]
    assert refused.reason is not None and "KeyError" in refused.reason and "'id'" in refused.reason


async def test_unreadable_target_record_is_not_blamed_on_the_source() -> None:
    from agentscope_teams.errors import SchemaVersionError
    from agentscope_teams.sessions import session_key
    from agentscope_teams.store import store_from_url

    prefix = "astest-target-" + uuid.uuid4().hex[:8]
    url = _hand_written(prefix, {"s1": _minimal("s1")})
    try:
        async with store_from_url("memory://") as store:
            await store.put(session_key(None, "u", "a", "s1"), b"not json")
            with pytest.raises(SchemaVersionError, match=r"session record at .* cannot be read"):
                await import_agentscope_sessions(url, SessionStorage(store))
    finally:
        _drop(prefix)


async def test_missing_source_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentscope_teams.errors import MissingDependencyError
    from agentscope_teams.store import store_from_url
    from agentscope_teams.store import url as store_url

    async with store_from_url("memory://") as store:
        monkeypatch.setattr(store_url, "_installed", lambda module: module != "redis")
        with pytest.raises(MissingDependencyError, match=r"agentscope-teams\[redis\]"):
            await import_agentscope_sessions("redis://127.0.0.1:1/0", SessionStorage(store))


async def test_sql_row_without_json_payload_is_refused_with_the_reason(tmp_path: Path) -> None:
    import sqlite3

    from agentscope_teams.store import store_from_url

    db = tmp_path / "agentscope.db"
    with sqlite3.connect(db) as conn:
        conn.execute(
            "CREATE TABLE sessions (id TEXT, created_at TEXT, updated_at TEXT, user_id TEXT, "
            "agent_id TEXT, team_id TEXT, source TEXT, source_schedule_id TEXT, payload)"
        )
        conn.execute("INSERT INTO sessions (id, payload) VALUES ('s1', 5)")
    async with store_from_url("memory://") as store:
        report = await import_agentscope_sessions(f"sqlite:///{db}", SessionStorage(store))
    (only,) = report.sessions
    assert only.outcome == "refused" and only.where == "sessions/s1"
    assert only.reason == "payload is int, not JSON"


async def test_a_key_of_another_type_is_refused_by_name_and_the_others_import() -> None:
    import redis

    from agentscope_teams.store import store_from_url

    prefix = "astest-wrongtype-" + uuid.uuid4().hex[:8]
    url = _hand_written(prefix, {"good": _minimal("good")})
    client = redis.Redis.from_url(REDIS_URL)
    client.hset(f"{prefix}:user:u:session:hashed", "a", "b")  # matches the layout, not a string
    client.close()
    try:
        async with store_from_url("memory://") as store:
            report = await import_agentscope_sessions(url, SessionStorage(store))
    finally:
        _drop(prefix)
    assert _outcomes(report) == {None: "refused", "good": "created"}
    (refused,) = [s for s in report.sessions if s.outcome == "refused"]
    assert refused.where == f"{prefix}:user:u:session:hashed"
    assert refused.reason is not None and "WRONGTYPE" in refused.reason
