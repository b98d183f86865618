"""``python -m bench.claude_corpus``: which files it counts as agents and what it prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.claude_corpus import agent_files, main


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_output_styles_are_not_agents_and_failures_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude = tmp_path / ".claude"
    _write(claude / "agents" / "ok.md", "---\nname: ok\ndescription: Fine.\n---\nBody.\n")
    _write(claude / "agents" / "team" / "bad.md", "---\nname: bad.\ndescription: x\n---\nB\n")
    style = "---\nname: Bullet Points\ndescription: Answers in bullets.\n---\nUse bullets.\n"
    _write(claude / "output-styles" / "bullets.md", style)
    found = agent_files(tmp_path)
    assert [p.name for p in found] == ["ok.md", "bad.md"]
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 files, 1 errors" in out
    assert f"{claude / 'agents' / 'team' / 'bad.md'}:2:" in out
