"""The long-running commands freeze the start-up heap once (``gc.freeze``)."""

from __future__ import annotations

import gc

from agentscope_teams.cli.heap import freeze_startup_heap


def test_freezing_the_startup_heap_leaves_the_collector_little_to_walk() -> None:
    tracked = len(gc.get_objects())
    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() >= tracked // 2  # the start-up objects are frozen
        assert len(gc.get_objects()) < tracked // 10  # and a collection no longer walks them
    finally:
        gc.unfreeze()
