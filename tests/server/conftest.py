from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..backends import unique_namespace
from .harness import Served, serve


@pytest.fixture
def org() -> str:
    return unique_namespace()


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"file://{tmp_path / 'store'}"


@pytest.fixture
def served(store_url: str, org: str) -> Iterator[Served]:
    """A server over a file store with operator tokens for alice and bob (same org)."""
    with serve(store_url, {"alice": (org, "alice"), "bob": (org, "bob")}) as s:
        yield s


@pytest.fixture
def http(served: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=served.base_url, timeout=30) as client:
        yield client


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
