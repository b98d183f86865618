"""One bad record never stops ``sessions import``: each is converted on its own, a bad one is
refused with its id and reason, every good one is imported, and the exit code says some were
refused. The records sit in a real Redis in AgentScope's ``RedisStorage`` layout."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ...backends import REDIS_URL
from ...cli.conftest import Cli
from ...conftest import require_service

STAMP = "2026-01-02T03:04:05.000006"


def record(session_id: str, user: str, plain: bool = False, **changes: Any) -> dict[str, Any]:
    """A session as AgentScope 2.0's RedisStorage stores it (SessionRecord.model_dump);
    ``plain``: the user message's content is a string (AgentScope's ``Msg`` allows one)."""
    state = {
        "session_id": session_id,
        "summary": "",
        "context": [
            {
                "id": f"{session_id}-m1",
                "name": "user",
                "role": "user",
                "content": "hello" if plain else [{"type": "text", "text": "hello"}],
                "created_at": STAMP,
            },
            {
                "id": f"{session_id}-r1",
                "name": "helper",
                "role": "assistant",
                "content": [{"type": "text", "text": "hi there"}],
                "created_at": STAMP,
            },
        ],
        "reply_context": {"reply_id": f"{session_id}-r1", "cur_iter": 1},
        "middle_context": {},
    }
    value: dict[str, Any] = {
        "id": session_id,
        "user_id": user,
        "agent_id": "helper",
        "created_at": STAMP,
        "updated_at": STAMP,
        "team_id": None,
        "config": {"name": "chat"},
        "state": state,
    }
    for path, item in changes.items():  # "state.reply_context.cur_iter" style, dots as "__"
        *parents, leaf = path.split("__")
        target = value
        for part in parents:
            target = target[part]
        target[leaf] = item
    return value


def _bad_records(user: str) -> dict[str, str]:
    """session id -> the JSON text AgentScope's storage would hand back."""
    deep = "[" * 5000 + "]" * 5000
    nested = json.dumps(record("s-bad-deep", user)).replace(
        '"middle_context": {}', f'"middle_context": {{"x": {deep}}}'
    )
    overflow = json.dumps(record("s-bad-inf", user)).replace('"cur_iter": 1', '"cur_iter": 1e999')
    nan = json.dumps(record("s-bad-nan", user)).replace(
        '"middle_context": {}', '"middle_context": {"x": NaN}'
    )
    year_one = json.dumps(record("s-bad-year", user, created_at="0001-01-01T00:00:00+14:00"))
    shallow_too_deep = json.dumps(record("s-bad-depth", user, state__middle_context={"x": [[[]]]}))
    shallow_too_deep = shallow_too_deep.replace("[[[]]]", "[" * 300 + "]" * 300)
    return {
        "s-bad-deep": nested,
        "s-bad-inf": overflow,
        "s-bad-nan": nan,
        "s-bad-year": year_one,
        "s-bad-depth": shallow_too_deep,
    }


GOOD = ("s-good-a", "s-good-m", "s-good-z")  # sorted keys put the bad ones between them
PLAIN = "s-good-text"


@pytest.fixture
def source() -> Iterator[tuple[str, str]]:
    """(user, --from URL): good and bad AgentScope records under a key prefix of their own."""
    require_service("redis")
    import redis

    user = "as-" + uuid.uuid4().hex[:10]
    prefix = f"astest-{user}"
    client = redis.Redis.from_url(REDIS_URL)
    texts = {sid: json.dumps(record(sid, user)) for sid in GOOD} | _bad_records(user)
    texts[PLAIN] = json.dumps(record(PLAIN, user, plain=True))
    for sid, text in texts.items():
        client.set(f"{prefix}:user:{user}:session:{sid}", text)
    try:
        yield user, f"{REDIS_URL}?prefix={prefix}"
    finally:
        for name in client.scan_iter(match=f"{prefix}:*"):
            client.delete(name)
        client.close()


def test_bad_records_are_refused_one_by_one_and_the_rest_import(
    source: tuple[str, str], tmp_path: Path
) -> None:
    user, url = source
    cli = Cli(tmp_path)
    target = f"sqlite:///{tmp_path / 'ours.db'}"
    done = cli.run("sessions", "import", "--from", url, "--to", target, "--json")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr  # some were refused
    docs = [json.loads(line) for line in done.stdout.splitlines()]
    outcomes = {d["where"].rpartition(":")[2]: d for d in docs[:-1]}
    assert {sid for sid, d in outcomes.items() if d["outcome"] == "created"} == {*GOOD, PLAIN}
    refused = {sid: d["reason"] for sid, d in outcomes.items() if d["outcome"] == "refused"}
    assert set(refused) == set(_bad_records(user)), refused
    assert "nested deeper" in refused["s-bad-deep"] and "nested deeper" in refused["s-bad-depth"]
    assert "1e999" in refused["s-bad-inf"] and "NaN" in refused["s-bad-nan"]
    assert "out of range" in refused["s-bad-year"]
    assert docs[-1]["summary"] == {"created": 4, "updated": 0, "unchanged": 0, "refused": 5}

    listed = cli.run("sessions", "list", "--user", user, "--store", target, "--json")
    ids = sorted(json.loads(line)["session_id"] for line in listed.stdout.splitlines())
    assert ids == sorted([*GOOD, PLAIN])


def test_only_good_records_exit_zero(source: tuple[str, str], tmp_path: Path) -> None:
    """Control for the exit code: the same good records with the bad ones removed import with 0."""
    import redis

    user, url = source
    prefix = url.rpartition("prefix=")[2]
    client = redis.Redis.from_url(REDIS_URL)
    for sid in _bad_records(user):
        client.delete(f"{prefix}:user:{user}:session:{sid}")
    client.close()
    done = Cli(tmp_path).run("sessions", "import", "--from", url, "--to", "memory://", "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "would convert 4 session(s)" in done.stdout and "refused 0" in done.stdout
