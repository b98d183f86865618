"""Claude Code spec files as people write them: the ``corpus/wild`` table.

Every file has one expected outcome, asserted twice: the default reader (strict YAML first, then
the lenient fallback for unquoted values containing ': ') and the strict reader used by
``specs check --strict`` (``strict_yaml=True``), which never falls back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agentscope_teams.errors import SpecError
from agentscope_teams.subagents import SpecErrors, SpecWarning, SubagentSpec, load_specs

WILD = Path(__file__).parent / "corpus" / "wild"
ALIASES = {"sonnet": "openai:gpt-4o", "opus": "openai:o3"}
LENIENT = "loaded leniently: quote the value"
COLON = "mapping values are not allowed here"


@dataclass(frozen=True)
class Expect:
    """One file's outcome. ``error``: refused (line, part of the reason); otherwise it loads with
    ``fields``. ``lenient``: it loads only through the fallback, with a warning on that line, and
    the strict reader refuses it with ``strict_error``. ``warnings``: parts of other warnings."""

    fields: dict[str, Any] = field(default_factory=dict)
    lenient: int | None = None
    strict_error: tuple[int, str] | None = None
    warnings: tuple[str, ...] = ()
    error: tuple[int, str] | None = None


CASES: dict[str, Expect] = {
    # names with dots load, from `name:` or from the file stem
    "dotnet-framework-4.8-expert.md": Expect(
        fields={
            "name": "dotnet-framework-4.8-expert",
            "tools": ["read_file", "grep_files", "glob_files"],
            "model": "openai:gpt-4o",
            "warnings": [],
        }
    ),
    "powershell-5.1-expert.md": Expect(
        fields={
            "name": "powershell-5.1-expert",
            "tools": ["read_file", "write_file", "bash", "bash_output", "kill_shell"],
            "unavailable_tools": [],
        }
    ),
    "name-trailing-dot.md": Expect(error=(2, "must not start or end with '.'")),
    # unquoted values containing ': ' load leniently
    "colon-in-description.md": Expect(
        fields={
            "name": "release-notes-writer",
            "description": "Use this agent for release notes. Triggers on: 'changelog', "
            "'release notes', 'what changed'",
            "tools": ["read_file", "grep_files"],
            "model": None,
            "system_prompt": "You turn a list of merged changes into release notes grouped by area.",
        },
        lenient=3,
        strict_error=(3, COLON),
    ),
    "colon-in-continuation.md": Expect(
        fields={
            "description": "Plans database migrations step by step. Use it when the user asks: "
            "how do I rename this column without downtime",
            "tools": ["read_file"],
        },
        lenient=3,
        strict_error=(4, COLON),
    ),
    "colon-with-block-list.md": Expect(
        fields={
            "description": "Keeps the incident timeline. Examples: 'log that the DB failed over', "
            "'summarize the outage'",
            "tools": ["read_file", "write_file", "web_fetch"],
            "unavailable_tools": [],
            "extra": {},
            "color": "red",
        },
        lenient=3,
        strict_error=(3, COLON),
        warnings=(),
    ),
    "colon-at-line-end.md": Expect(
        fields={"description": "Explains an HTTP API to newcomers. Good at:", "model": "haiku"},
        lenient=3,
        strict_error=(3, COLON),
        warnings=(),
    ),
    "colon-with-comment.md": Expect(
        fields={
            "description": "Tunes slow SQL. Use when: a query takes seconds",
            "tools": ["read_file", "grep_files"],
        },
        lenient=3,
        strict_error=(3, COLON),
    ),
    "colon-crlf-bom.md": Expect(
        fields={
            "name": "windows-colon",
            "description": "Saved by Notepad. Use when: the user mentions IIS",
            "model": "openai:gpt-4o",
            "system_prompt": "You know IIS.",
        },
        lenient=3,
        strict_error=(3, COLON),
    ),
    "yaml-unquoted-colon.md": Expect(
        fields={"name": "helper", "description": "Use this agent when: the user asks for help"},
        lenient=3,
        strict_error=(3, COLON),
    ),
    "colon-with-comment-lines.md": Expect(
        fields={
            "description": "Triages flaky tests. Use when: CI fails twice",
            "tools": ["read_file", "grep_files"],
        },
        lenient=3,
        strict_error=(3, COLON),
    ),
    # what the fallback does not cover still fails, at the right line
    "colon-duplicate-key.md": Expect(
        error=(4, "key 'description' appears twice (lines 3 and 4)"), strict_error=(3, COLON)
    ),
    "colon-quoted-key.md": Expect(error=(3, COLON)),
    "colon-then-bad-indent.md": Expect(error=(6, "fix the indentation"), strict_error=(3, COLON)),
    "colon-in-quoted-value.md": Expect(error=(3, "expected <block end>, but found '<scalar>'")),
    "indented-frontmatter.md": Expect(error=(3, COLON)),
    "no-frontmatter-colon.md": Expect(error=(1, "no YAML frontmatter")),
    # what Claude Code files do besides
    "crlf.md": Expect(
        fields={
            "name": "windows-crlf",
            "tools": ["read_file", "grep_files"],
            "system_prompt": "Body line one.\nBody line two.",
        }
    ),
    "trailing-space-fence.md": Expect(
        fields={"name": "fence-spaces", "system_prompt": "Body after spaced fences."}
    ),
    "empty-body.md": Expect(
        fields={"system_prompt": "", "model": "openai:o3"},
        warnings=("line 5: the body is empty, so the subagent has no system prompt",),
    ),
    "tools-comma-spaces.md": Expect(
        fields={
            "tools": [
                "read_file",
                "grep_files",
                "glob_files",
                "bash",
                "bash_output",
                "kill_shell",
                "list_files",
            ],
            "unavailable_tools": [],
        }
    ),
    "unknown-keys.md": Expect(
        fields={
            "extra": {"owner": "docs-team"},
            "color": "green",
            "permission_mode": "accept_edits",
        },
        warnings=("line 6: unknown key 'owner' is ignored",),
    ),
}


def test_the_table_covers_the_corpus() -> None:
    assert {p.name for p in WILD.glob("*.md")} == set(CASES)
    assert len(CASES) >= 12
    for name in ("crlf.md", "colon-crlf-bom.md"):
        assert b"\r\n" in (WILD / name).read_bytes(), f"{name} lost its CRLF line endings"
    assert (WILD / "colon-crlf-bom.md").read_bytes().startswith(b"\xef\xbb\xbf")


def _refused(path: Path, expected: tuple[int, str], *, strict_yaml: bool) -> None:
    line, reason = expected
    with pytest.raises(SpecError) as info:
        SubagentSpec.from_file(path, model_aliases=ALIASES, strict_yaml=strict_yaml)
    error = info.value
    assert not isinstance(error, SpecErrors), str(error)
    assert (error.file, error.line) == (path, line), str(error)
    assert reason in error.reason
    assert str(error).startswith(f"{path}:{line}: ")


@pytest.mark.parametrize("name", sorted(CASES))
def test_wild_file(name: str) -> None:
    path, expect = WILD / name, CASES[name]
    if expect.error is not None:
        _refused(path, expect.error, strict_yaml=False)
    else:
        spec = SubagentSpec.from_file(path, model_aliases=ALIASES)
        assert spec.source == path and spec.description
        for key, value in expect.fields.items():
            assert getattr(spec, key) == value, key
        lenient = [w for w in spec.warnings if LENIENT in w]
        if expect.lenient is None:
            assert lenient == []
        else:
            assert lenient == [
                f"line {expect.lenient}: {LENIENT} of 'description', which contains ': ' and "
                'is not valid YAML unquoted (`description: "..."`); '
                "`specs check --strict` refuses it"
            ]
        for part in expect.warnings:
            assert any(part in w for w in spec.warnings), (part, spec.warnings)

    strict_error = expect.strict_error or expect.error
    if strict_error is not None:
        _refused(path, strict_error, strict_yaml=True)
    else:
        strict = SubagentSpec.from_file(path, model_aliases=ALIASES, strict_yaml=True)
        assert strict == SubagentSpec.from_file(path, model_aliases=ALIASES)


def test_load_specs_warns_with_file_and_line_and_strict_refuses() -> None:
    result = load_specs(WILD, strict=False, model_aliases=ALIASES)
    loads = {n for n, e in CASES.items() if e.error is None}
    assert {spec.source.name for spec in result.specs.values() if spec.source} == loads
    assert sorted((e.file.name, e.line) for e in result.errors if e.file) == sorted(
        (n, e.error[0]) for n, e in CASES.items() if e.error is not None
    )
    lenient = sorted(
        (w.file.name, w.line) for w in result.warnings if w.file and LENIENT in w.message
    )
    assert lenient == sorted((n, e.lenient) for n, e in CASES.items() if e.lenient)
    warning = next(w for w in result.warnings if w.file == WILD / "colon-in-description.md")
    assert isinstance(warning, SpecWarning)
    assert str(warning).startswith(f"{WILD / 'colon-in-description.md'}:3: {LENIENT}")

    strict = load_specs(WILD, strict=False, model_aliases=ALIASES, strict_yaml=True)
    refused = {e.file.name for e in strict.errors if e.file}
    assert refused == {n for n, e in CASES.items() if e.error or e.lenient}
    assert not any(LENIENT in w.message for w in strict.warnings)
