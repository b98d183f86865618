"""Test kits shipped with the package for code built on it. They need pytest (not a dependency of
the package: install it in your test environment).

* :class:`StoreConformance`: the store conformance suite a store backend runs to show it keeps the
  :class:`~agentscope_teams.store.BaseStore` contract (``docs/stores.md``).
"""

from __future__ import annotations

import pytest

# pytest explains a failed assert of these modules (it rewrites only test modules by default).
pytest.register_assert_rewrite(
    *(f"{__name__}.{m}" for m in ("_store_entries", "_store_listing", "_store_streams"))
)
pytest.register_assert_rewrite(f"{__name__}._store_values", f"{__name__}._store_support")

from .store import StoreConformance, StoreFactory  # noqa: E402

__all__ = ["StoreConformance", "StoreFactory"]
