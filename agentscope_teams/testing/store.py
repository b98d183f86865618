"""The store conformance suite: what every :class:`~agentscope_teams.store.BaseStore` backend
guarantees (``agentscope_teams.store.base``), as pytest tests a backend's author runs on their own
store. Subclass :class:`StoreConformance` in a test module and give it a ``store_factory``::

    import pytest
    from agentscope_teams.testing import StoreConformance

    from my_package import MyStore


    class TestMyStore(StoreConformance):
        @pytest.fixture
        def store_factory(self, tmp_path):
            return lambda **options: MyStore(tmp_path / "data", **options)

The factory builds a new store (an async context manager; ``setup()`` runs on entry) and passes
backend options through; the suite uses ``max_value_bytes``. Every test keys its data under a
fresh namespace segment (the ``ns`` fixture), so stores sharing a server may run it in parallel.
Async tests run through anyio's pytest plugin (installed with anyio) on asyncio; override the
``anyio_backend`` fixture to choose another. See ``docs/stores.md``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from ..store import StoreBackend
from ._store_entries import EntryTests
from ._store_listing import ListingTests
from ._store_streams import StreamTests
from ._store_support import StoreFactory, unique_namespace
from ._store_values import ValueTests


class StoreConformance(EntryTests, ListingTests, StreamTests, ValueTests):
    """Every conformance test; a subclass named ``Test...`` defines the ``store_factory`` fixture."""

    pytestmark = pytest.mark.anyio

    @pytest.fixture
    def store_factory(self) -> StoreFactory:
        """Override: return a callable ``(**options) -> store`` building the store under test."""
        raise NotImplementedError(
            f"{type(self).__name__} must define a store_factory fixture returning a callable "
            "(**options) -> store; see agentscope_teams.testing.store"
        )

    @pytest.fixture
    async def store(self, store_factory: StoreFactory) -> AsyncIterator[StoreBackend]:
        """A store from the factory, set up on entry and closed after the test."""
        async with store_factory() as opened:
            yield opened

    @pytest.fixture
    def ns(self) -> str:
        """A key segment unique to this test."""
        return unique_namespace()


__all__ = ["StoreConformance", "StoreFactory"]
