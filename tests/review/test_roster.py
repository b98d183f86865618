"""The offline lead's roster is the spec directory shipped in ``review/specs/``: one source."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentscope_teams.review import CATEGORY_OF_SPEC, offline_lead
from agentscope_teams.review.offline_lead import AREA_TITLE, SPECS_DIR, roster, shipped_roster


def test_the_roster_is_the_shipped_spec_files() -> None:
    names = tuple(sorted(p.stem for p in SPECS_DIR.glob("*.md")))
    assert shipped_roster() == names
    assert roster("no spec listed or named here") == list(names)


def test_every_shipped_spec_has_an_area_the_offline_model_can_review() -> None:
    for name in shipped_roster():
        assert AREA_TITLE[CATEGORY_OF_SPEC[name]]


def test_a_spec_added_to_the_directory_joins_the_roster(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    specs = tmp_path / "specs"
    shutil.copytree(SPECS_DIR, specs)
    (specs / "docs-checker.md").write_text(
        "---\nname: docs-checker\ndescription: Checks docstrings.\n---\nYou check docstrings.\n"
    )
    monkeypatch.setattr(offline_lead, "SPECS_DIR", specs)
    shipped_roster.cache_clear()
    try:
        assert "docs-checker" in shipped_roster()
        assert roster("- docs-checker: Checks docstrings.\n- reviewer: x") == [
            "docs-checker",
            "reviewer",
        ]
    finally:
        shipped_roster.cache_clear()
