"""Test kits shipped with the package for code built on it. They need pytest (not a dependency of
the package: install it in your test environment).

* :class:`StoreConformance`: the store conformance suite a store backend runs to show it keeps the
  :class:`~agentscope_teams.store.BaseStore` contract (``docs/stores.md``).
"""

from __future__ import annotations

from .store import StoreConformance, StoreFactory

__all__ = ["StoreConformance", "StoreFactory"]
