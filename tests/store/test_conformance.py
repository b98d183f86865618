"""The store conformance suite (:mod:`agentscope_teams.testing`), run on every backend.

Parametrized over every backend by the ``store_spec`` fixture (``tests/conftest.py``); the tests
themselves ship in the package, so a third-party backend runs the same ones
(``tests/store/test_third_party.py``). Multi-process behaviour lives in ``test_contention.py``.
"""

from __future__ import annotations

from functools import partial

import pytest

from agentscope_teams.store import store_from_url
from agentscope_teams.testing import StoreConformance, StoreFactory

from ..backends import StoreSpec


class TestConformance(StoreConformance):
    @pytest.fixture
    def store_factory(self, store_spec: StoreSpec) -> StoreFactory:
        return partial(store_from_url, store_spec.url)
