"""The long-running commands freeze the start-up heap once (``gc.freeze``) and collect their
young generation less often (``AGENTSCOPE_TEAMS_GC_THRESHOLD``)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from agentscope_teams.cli.heap import ENV, YOUNG_THRESHOLD, freeze_startup_heap
from agentscope_teams.errors import ConfigurationError


@pytest.fixture
def restored_collector() -> Iterator[None]:
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.mark.usefixtures("restored_collector")
def test_freezing_the_startup_heap_leaves_the_collector_little_to_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    older = gc.get_threshold()[1:]
    tracked = len(gc.get_objects())
    freeze_startup_heap()
    assert gc.get_freeze_count() >= tracked // 2  # the start-up objects are frozen
    assert len(gc.get_objects()) < tracked // 10  # and a collection no longer walks them
    assert gc.get_threshold() == (YOUNG_THRESHOLD, *older)  # young collections are rarer


@pytest.mark.usefixtures("restored_collector")
def test_the_environment_sets_the_young_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "700")
    freeze_startup_heap()
    assert gc.get_threshold()[0] == 700


@pytest.mark.usefixtures("restored_collector")
@pytest.mark.parametrize("value", ["0", "-5", "lots"])
def test_a_bad_threshold_names_the_variable_and_changes_nothing(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(ENV, value)
    before = gc.get_threshold()
    with pytest.raises(ConfigurationError, match=ENV):
        freeze_startup_heap()
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
