"""Every backend declares its capabilities in one place (``capabilities``), read with
``capabilities_of``; the older probes (``signals_of``, ``takes_write_options``, ``shared_across_*``)
answer the same."""

from __future__ import annotations

from agentscope_teams.store import StoreBackend
from agentscope_teams.store.base import (
    shared_across_hosts,
    shared_across_processes,
    signals_of,
    takes_write_options,
)
from agentscope_teams.store.capabilities import StoreCapabilities, capabilities_of

from ..backends import StoreSpec

#: What each backend of the test matrix declares, as opened by the tests.
EXPECTED = {
    "memory": StoreCapabilities(
        signals=True, shared_across_processes=False, fenced_delete=True, purges_expired=True
    ),
    "file": StoreCapabilities(signals=False, fenced_delete=True, purges_expired=True),
    # the board runs the generic queue on SQLite
    "sqlite": StoreCapabilities(fenced_delete=True, purges_expired=True),
    "mariadb": StoreCapabilities(
        board_queue="sql", shared_across_hosts=True, fenced_delete=True, purges_expired=True
    ),
    "postgres": StoreCapabilities(  # round reads: one statement (issue 26's h-pgwake)
        signals=True,
        board_queue="sql",
        shared_across_hosts=True,
        round_reads=True,
        fenced_delete=True,
        purges_expired=True,
    ),
    "redis": StoreCapabilities(
        signals=True,
        board_queue="redis",
        shared_across_hosts=True,
        field_records=True,
        round_reads=True,
        fenced_delete=True,
    ),
    "redis-cluster": StoreCapabilities(
        signals=True,
        board_queue="redis",
        shared_across_hosts=True,
        field_records=True,
        fenced_delete=True,
    ),
}


async def test_each_backend_declares_its_capabilities(
    store: StoreBackend, store_spec: StoreSpec
) -> None:
    caps = capabilities_of(store)
    assert caps == EXPECTED[store_spec.backend]
    assert store.capabilities == caps
    assert (signals_of(store) is store) == caps.signals
    assert takes_write_options(store) == caps.fencing
    assert shared_across_processes(store) == caps.shared_across_processes
    assert shared_across_hosts(store) == caps.shared_across_hosts


async def test_switching_signals_off_is_declared(store: StoreBackend) -> None:
    store.signals_enabled = False  # type: ignore[attr-defined]
    assert not capabilities_of(store).signals
    assert signals_of(store) is None


def test_a_store_declaring_nothing_gets_the_conservative_answer() -> None:
    class Bare:
        async def put(self, key: object, value: bytes) -> int:
            return 1

        async def list_keys(self, prefix: object) -> list[object]:
            return []

    caps = capabilities_of(Bare())
    assert caps == StoreCapabilities(signals=False, fencing=False, shared_across_hosts=False)
    assert caps.shared_across_processes  # assumed shared: callers keep their guards
