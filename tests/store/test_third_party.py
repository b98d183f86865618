"""A store backend defined outside the package (``tests/third_party/tiny_store.py``) runs the
shipped conformance suite: registered at run time here, and found through its entry point by a
fresh process that runs the suite with pytest alone (no conftest of ours)."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import anyio
import pytest

from agentscope_teams.store import register_store_scheme, store_from_url
from agentscope_teams.store.registry import ENTRY_POINT_GROUP, unregister_store_scheme
from agentscope_teams.testing import StoreConformance, StoreFactory

from ..third_party.tiny_store import TinyStore, open_tiny

REPO = Path(__file__).resolve().parents[2]

#: The test module a third party writes: the suite, a factory, nothing else.
THIRD_PARTY_TESTS = """
from functools import partial

import pytest

from agentscope_teams.store import store_from_url, store_schemes
from agentscope_teams.testing import StoreConformance


def test_the_entry_point_registered_the_scheme():
    assert "tiny" in store_schemes()


class TestTinyStore(StoreConformance):
    @pytest.fixture
    def store_factory(self):
        return partial(store_from_url, "tiny://")
"""


class TestTinyStoreRegisteredAtRunTime(StoreConformance):
    @pytest.fixture
    def store_factory(self) -> Iterator[StoreFactory]:
        register_store_scheme("tiny", open_tiny)
        try:
            yield partial(store_from_url, "tiny://")
        finally:
            unregister_store_scheme("tiny")

    async def test_the_url_opens_the_third_party_store(self, store: TinyStore) -> None:
        assert type(store) is TinyStore


def install_entry_point(site: Path) -> None:
    """What ``pip install`` of a package declaring the entry point leaves in site-packages."""
    info = site / "tiny_store_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiny-store-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\ntiny = tests.third_party.tiny_store:open_tiny\n"
    )


async def test_a_backend_found_by_entry_point_passes_the_shipped_suite(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    install_entry_point(site)
    (tmp_path / "test_tiny.py").write_text(THIRD_PARTY_TESTS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(REPO)])}
    done = await anyio.run_process(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_tiny.py"],
        cwd=tmp_path,
        env=env,
        check=False,
    )
    out = done.stdout.decode() + done.stderr.decode()
    assert done.returncode == 0, out
    passed = re.search(r"(\d+) passed", out)
    assert passed is not None and int(passed.group(1)) > 46, out
    assert "failed" not in out and "skipped" not in out and "error" not in out, out
