"""A riding ``ADMIT`` or ``FINISH`` is packed from its shape's template (``_redis_pack.Template``:
the keys, limits and rates of a call packed once, its id and amounts filled in): byte for byte
what redis-py packs for the same command, after a budget or a rate changes too, with no argument
packed again on a later call of the same shape; a value the template does not pack, or a
connection of another encoding, takes the generic packer (issue 27)."""

from __future__ import annotations

import enum
import uuid
from typing import Any

import pytest
import redis.asyncio as aioredis

from agentscope_teams.store import BaseStore
from agentscope_teams.store import _redis_pack as pack
from agentscope_teams.store._redis_lean import _packed
from agentscope_teams.usage.backend import usage_backend
from agentscope_teams.usage.rules import Admission, Limit, Rates

pytestmark = pytest.mark.anyio


class _Script:
    """A script's command as ``LeanScript.command`` makes it."""

    def command(self, keys: Any, args: Any) -> tuple[Any, ...]:
        return ("EVALSHA", "f" * 40, len(keys), *keys, *args)


class Tokens(enum.IntEnum):
    MANY = 5


def _redis_py(command: Any, conn: Any = None) -> bytes:
    return b"".join((conn or aioredis.Connection()).pack_command(*command))


@pytest.mark.parametrize(
    "values",
    [
        ("rid-1", 1000, 0),
        ("r\u00e9servation %s %d", -7, 10**30),
        ("", 0, 58.8),
        ("x" * 5000, 1, float("inf")),
    ],
)
def test_a_template_packs_as_redis_py_packs_the_whole_command(values: tuple[Any, ...]) -> None:
    keys = ["usage:ledger:team%41", "k\u00e9"]
    args = [2, "sample", 1, 1, 900_000, 1, 58.8, 0, 0, 1000, "t%d", "-", -1, 10**9]
    made = pack.template(_Script(), keys, args, (1, 2, 3))
    assert made is not None
    filled = [*args]
    filled[1:4] = values
    assert made.fill(values) == _redis_py(_Script().command(keys, filled))
    assert made.arguments(values) == filled


def test_a_value_of_another_type_is_left_to_the_generic_packer() -> None:
    """redis-py refuses a bool and packs an int enum from its ``repr``: the template packs
    neither (a bytes, a None, an object: the same)."""
    made = pack.template(_Script(), ["k"], [1, "rid", 2], (1, 2))
    assert made is not None
    for bad in (True, Tokens.MANY, b"x", None, object()):
        assert made.fill(("rid", bad)) is None
    assert pack.template(_Script(), ["k"], [object(), "rid"], (1,)) is None


def _admission(limits: tuple[Limit, ...], rates: Rates, tokens: int = 500) -> Admission:
    return Admission(limits, uuid.uuid4().hex, tokens, 70, "p|m|k", rates, "tenant")


async def test_a_riding_admit_and_finish_pack_as_redis_py_and_pack_no_argument_again(
    redis: BaseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first call of a shape packs its template; the next packs no argument (``_bulk``
    is not called) and sends the same bytes redis-py packs for its command; another budget limit
    or rate is another shape, packed as redis-py packs it too."""
    store: Any = redis
    backend: Any = usage_backend(store)
    bulks: list[object] = []
    bulk = pack._bulk

    def counted(arg: Any) -> bytes | None:
        bulks.append(arg)
        return bulk(arg)

    monkeypatch.setattr(pack, "_bulk", counted)
    team = "team:" + uuid.uuid4().hex[:8]
    shapes = [
        ((Limit(team, 10**9, None),), Rates(rpm=58.8, burst=10)),
        ((Limit(team, 10**9, None),), Rates(rpm=58.8, burst=10)),  # the same shape: equal values
        ((Limit(team, 2 * 10**9, 5),), Rates(rpm=58.8, burst=10)),  # the budget changed
        ((Limit(team, 2 * 10**9, 5),), Rates(rpm=30.0, tpm=9e4, concurrent=4)),  # the rate
    ]
    conn = aioredis.Connection()
    token = store.open_rides()
    assert token is not None
    try:
        for i, (limits, rates) in enumerate(shapes):
            bulks.clear()
            a = _admission(limits, rates, tokens=500 + i)
            admit, finish = backend.ride_admit(a), backend.ride_finish(a, 120 + i, 9)
            assert (admit.wire, finish.wire) == (
                _redis_py(backend._admit.command(backend._keys(a), backend._args(a))),
                _redis_py(
                    backend._finish.command(backend._keys(a), backend._end_args(a, 120 + i, 9, 0))
                ),
            )
            assert tuple(admit) == backend._admit.command(backend._keys(a), backend._args(a))
            assert _packed(conn, [admit, finish], 2) == [admit.wire, finish.wire]
            assert (i == 1) == (bulks == [])  # the second call of a shape packs no argument
            assert store.drop(admit) and store.drop(finish)
    finally:
        store.close_rides(token)


async def test_a_connection_of_another_encoding_packs_a_rider_again(redis: BaseStore) -> None:
    """A rider's packed bytes are UTF-8: a connection encoding latin-1 sends what redis-py
    packs for it."""
    store: Any = redis
    backend: Any = usage_backend(store)
    a = Admission((Limit("team:\u00e9", 10, None),), "rid-\u00e9", 5, 0, None, Rates(), "t")
    token = store.open_rides()
    try:
        rider = backend.ride_admit(a)
        assert rider.wire is not None
        latin = aioredis.Connection(encoding="latin-1")
        command = backend._admit.command(backend._keys(a), backend._args(a))
        assert b"".join(_packed(latin, [rider], 1)) == _redis_py(command, latin) != rider.wire
        assert store.drop(rider)
    finally:
        store.close_rides(token)


async def test_a_riding_admit_lands_granted_and_finish_settles(redis: BaseStore) -> None:
    """Packed riders do what the scripts do: an ``ADMIT`` alone (no round trip took it) reserves,
    a ``FINISH`` riding a write settles."""
    store: Any = redis
    backend: Any = usage_backend(store)
    team = "team:" + uuid.uuid4().hex[:8]
    a = _admission((Limit(team, 10**9, None),), Rates(rpm=1e6, burst=100))
    token = store.open_rides()
    try:
        admit = backend.ride_admit(a)
        assert (await backend.admitted(a, admit)).refusal is None
        assert (await backend.read(team))["rt"] == 500
        finish = backend.ride_finish(a, 120, 0)
        assert await store.put(("riders", uuid.uuid4().hex[:8]), b"v") == 1
        await backend.landed(finish)
    finally:
        store.close_rides(token)
    assert await backend.read(team) == {"ut": 120, "un": 0, "rt": 0, "rn": 0}
