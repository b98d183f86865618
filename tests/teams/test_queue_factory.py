"""The board's queue is picked by the board-queue family its store declares."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from agentscope_teams.store import InMemoryStore
from agentscope_teams.store.capabilities import StoreCapabilities
from agentscope_teams.teams import TeamKeys
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues import factory
from agentscope_teams.teams.queues.store import StoreQueue

KEYS = TeamKeys(("o:acme", "u:bob"), "t-1")


class Declaring(InMemoryStore):
    capabilities = StoreCapabilities(board_queue="custom", shared_across_processes=False)


class CustomQueue(StoreQueue):
    native = True


@pytest.fixture
def custom() -> Iterator[list[Any]]:
    built: list[Any] = []

    def family(store: Any, keys: TeamKeys) -> CustomQueue:
        built.append(store)
        return CustomQueue(store, keys)

    factory.register_queue_family("custom", family)
    yield built
    factory._FAMILIES.pop("custom")


def test_a_declared_family_builds_the_queue(custom: list[Any]) -> None:
    store = Declaring()
    board = TaskBoard(store, KEYS)
    assert isinstance(board.queue, CustomQueue) and board.native
    assert custom == [store]


def test_forcing_the_generic_queue_skips_the_family(custom: list[Any]) -> None:
    board = TaskBoard(Declaring(), KEYS, native=False)
    assert type(board.queue) is StoreQueue and not board.native
    assert custom == []


def test_an_unknown_family_or_none_is_the_generic_queue() -> None:
    assert type(TaskBoard(Declaring(), KEYS).queue) is StoreQueue  # "custom" not registered
    assert type(TaskBoard(InMemoryStore(), KEYS).queue) is StoreQueue


def test_a_family_needs_a_name_and_a_callable() -> None:
    with pytest.raises(ValueError, match="needs a name and a callable"):
        factory.register_queue_family("", lambda s, k: None)
