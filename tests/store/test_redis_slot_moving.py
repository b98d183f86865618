"""The store's retry of a command refused while its slot migrates
(:func:`agentscope_teams.store._redis_cluster.through_migration`), on redis-py's real exceptions:
refusals that mean "not run" are tried again, anything else (a write that may have run) is not."""

from __future__ import annotations

import pytest

pytest.importorskip("redis")

import redis
from redis.exceptions import AskError, ClusterError, ConnectionError, MovedError, TryAgainError

from agentscope_teams.store._redis_cluster import slot_moving, through_migration

pytestmark = pytest.mark.anyio


class Refused:
    """A command refused ``times`` times with ``error``, then answering "ok"; counts its calls."""

    def __init__(self, error: Exception, times: int) -> None:
        self.error, self.times, self.calls = error, times, 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.times:
            raise self.error
        return "ok"


@pytest.mark.parametrize(
    "error",
    [
        TryAgainError("Multiple keys request during rehashing of slot"),
        AskError("1234 127.0.0.1:7001"),
        MovedError("1234 127.0.0.1:7001"),
        ClusterError("TTL exhausted."),
    ],
)
async def test_a_command_refused_while_its_slot_moves_is_tried_again(error: Exception) -> None:
    assert slot_moving(redis, error)
    command = Refused(error, times=3)
    assert await through_migration(redis, command, budget=30) == "ok"
    assert command.calls == 4


@pytest.mark.parametrize(
    "error", [ConnectionError("lost"), redis.exceptions.TimeoutError("no reply")]
)
async def test_an_error_after_which_the_command_may_have_run_is_not_retried(
    error: Exception,
) -> None:
    assert not slot_moving(redis, error)
    command = Refused(error, times=1)
    with pytest.raises(type(error)):
        await through_migration(redis, command, budget=30)
    assert command.calls == 1


async def test_a_slot_that_never_settles_ends_in_the_refusal_after_the_budget() -> None:
    command = Refused(TryAgainError("still moving"), times=10**6)
    with pytest.raises(TryAgainError):
        await through_migration(redis, command, budget=0.05)
    assert 1 < command.calls < 10**6
