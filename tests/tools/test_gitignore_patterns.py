"""``Read`` and ``Edit`` patterns read as gitignore reads them, as Claude Code documents
(code.claude.com/docs/en/permissions, "Read and Edit"): a pattern without a slash (``.env``,
``*.pem``, ``secrets``) names that name at any depth; ``./.env`` is ``.env`` (Claude Code strips
the ``./``); ``/.env`` is anchored to the workspace (Claude Code's project root); a pattern with
a slash in it (``config/.env``) is anchored too. The same reading holds in the permission engine
and in what the sandbox hides (:func:`~agentscope_teams.tools.sandbox_mask.mask_for`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscope_teams.state import PermissionContext
from agentscope_teams.tools import PermissionEngine, filesystem_tools, parse_rule, rule_matches
from agentscope_teams.tools.sandbox_mask import mask_for

FS = {t.name: t for t in filesystem_tools()}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = (tmp_path / "ws").resolve()
    for name in (
        ".env",
        "app/.env",
        "app/deep/.env",
        "app/main.py",
        "config/.env",
        "x/config/.env",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("SECRET\n")
    return root


def denied(ws: Path, rule: str, path: str) -> bool:
    engine = PermissionEngine([parse_rule(rule, "deny")], mode="bypass")
    return (
        engine.decide(FS["read_file"], {"path": path}, PermissionContext(), workspace=ws) == "deny"
    )


@pytest.mark.parametrize("rule", ["Read(.env)", "Read(./.env)", "Read(**/.env)"])
def test_a_name_without_a_slash_is_denied_at_any_depth(ws: Path, rule: str) -> None:
    for path in (".env", "app/.env", "app/deep/.env", str(ws / "app/deep/.env")):
        assert denied(ws, rule, path), (rule, path)
    assert not denied(ws, rule, "app/main.py")


def test_a_leading_slash_anchors_to_the_workspace(ws: Path) -> None:
    assert denied(ws, "Read(/.env)", ".env")
    assert denied(ws, "Read(/.env)", str(ws / ".env"))
    assert not denied(ws, "Read(/.env)", "app/.env")
    assert denied(ws, "Read(/app/**)", "app/deep/.env")
    assert not denied(ws, "Read(/app/**)", "x/app/y")


def test_a_slash_inside_the_pattern_anchors_it(ws: Path) -> None:
    assert denied(ws, "Read(config/.env)", "config/.env")
    assert not denied(ws, "Read(config/.env)", "x/config/.env")


def test_a_directory_name_without_a_slash_covers_that_directory_at_any_depth(ws: Path) -> None:
    assert denied(ws, "Read(deep)", "app/deep/.env")
    assert denied(ws, "Read(deep/)", "app/deep/.env")
    assert not denied(ws, "Read(deep)", "app/main.py")


def test_an_allow_rule_without_a_slash_allows_that_name_at_any_depth(ws: Path) -> None:
    rule = parse_rule("Edit(main.py)", "allow")
    matches = lambda path: rule_matches(  # noqa: E731
        rule, FS["edit_file"], {"path": path, "old_string": "a", "new_string": "b"}, workspace=ws
    )
    assert matches("app/main.py") and matches("main.py")
    assert not matches("app/other.py")
    assert not matches("/etc/main.py")  # a relative pattern speaks of the workspace only


def test_the_sandbox_hides_what_the_engine_denies(ws: Path) -> None:
    hidden = set(mask_for([parse_rule("Read(./.env)", "deny")], ws).hidden)
    assert {str(ws / p) for p in (".env", "app/.env", "app/deep/.env")} <= hidden
    anchored = set(mask_for([parse_rule("Read(/.env)", "deny")], ws).hidden)
    assert str(ws / ".env") in anchored and str(ws / "app/.env") not in anchored
    nested = set(mask_for([parse_rule("Read(config/.env)", "deny")], ws).hidden)
    assert str(ws / "config/.env") in nested and str(ws / "x/config/.env") not in nested
    named_dir = set(mask_for([parse_rule("Read(deep)", "deny")], ws).hidden)
    assert str(ws / "app/deep") in named_dir


def test_a_remembered_path_allows_that_path_only(ws: Path, tmp_path: Path) -> None:
    """A remembered ``notes.md`` must not read as a name at any depth, nor an absolute path
    outside the workspace as one inside it: the rule is written anchored (``/notes.md``) or
    absolute (``//abs/path``)."""
    engine = PermissionEngine()
    write = FS["write_file"]
    outside = str(tmp_path / "elsewhere" / "notes.md")
    for path, other in (("notes.md", "app/notes.md"), (outside, "notes.md")):
        rule = engine.remember_rule(write, {"path": path, "content": "x"}, workspace=ws)
        assert rule_matches(rule, write, {"path": path, "content": "x"}, workspace=ws), rule
        assert not rule_matches(rule, write, {"path": other, "content": "x"}, workspace=ws), rule


def test_a_double_star_between_slashes_also_matches_no_directory(ws: Path) -> None:
    """gitignore: ``a/**/b`` matches ``a/b``, ``a/x/b``, ``a/x/y/b``."""
    for path in ("app/.env", "app/deep/.env"):
        assert denied(ws, "Read(app/**/.env)", path), path
    assert not denied(ws, "Read(app/**/.env)", "config/.env")


def test_in_an_allow_rule_a_star_stays_in_one_directory(ws: Path) -> None:
    """As gitignore (and Claude Code) read it, ``*`` matches within one directory, ``**`` across:
    an allow rule grants no more than that. (A deny rule's ``*`` also spans ``/``: broader.)"""

    def allows(rule: str, path: str) -> bool:
        args = {"path": path, "old_string": "a", "new_string": "b"}
        return rule_matches(parse_rule(rule, "allow"), FS["edit_file"], args, workspace=ws)

    assert allows("Edit(src/*.py)", "src/a.py")
    assert not allows("Edit(src/*.py)", "src/deep/b.py")
    assert allows("Edit(src/**/*.py)", "src/a.py") and allows("Edit(src/**/*.py)", "src/x/y/b.py")
    assert allows("Edit(src/**)", "src/x/y/b.py") and not allows("Edit(src/**)", "lib/b.py")
    assert allows("Edit(src/?.py)", "src/a.py") and not allows("Edit(src/?.py)", "src/ab.py")
    assert allows("Edit(src/[ab].py)", "src/b.py") and not allows("Edit(src/[!ab].py)", "src/b.py")
    assert allows("Edit(*.py)", "src/deep/b.py")  # no slash: the name at any depth
    assert denied(ws, "Read(src/*.env)", "src/deep/x.env")
