"""Claude Code's Bash permission rules, matched against the simple commands a command runs
(:mod:`.shell_parse`).

A rule's pattern is one of:

* ``git diff:*`` — a prefix: the command's first words are ``git diff`` (word boundary: ``git
  diffx`` does not match);
* ``npm run test`` — exact: those words and nothing more;
* a pattern with ``*`` elsewhere (``git * main``, ``ls *``) — a wildcard over the command's words
  joined by spaces; a trailing `` *`` also matches the bare command (``ls *`` matches ``ls``).
  ``\\*`` is a literal star (remembered rules escape the stars of the command they allow).

Rules match a simple command by its words; a word that is an expansion has no known value and
matches only a ``*``. An output redirection into a file is a write, so no pattern rule allows it.
A command that cannot be parsed is allowed by no pattern rule (see
:mod:`~agentscope_teams.tools.permissions` for what deny rules do then).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .shell_parse import UNKNOWN, Part, Unparsed, command_start, parse_command

__all__ = [
    "Part",
    "Unparsed",
    "allowed_by_rules",
    "command_rule_matches",
    "escape_command",
    "parse_command",
    "parses",
]


def escape_command(command: str) -> str:
    """An exact rule pattern for ``command``: its stars escaped."""
    return command.strip().replace("*", "\\*")


def _has_wildcard(pattern: str) -> bool:
    return re.search(r"(?<!\\)\*", pattern) is not None


def _wildcard_regex(pattern: str) -> re.Pattern[str]:
    """``*`` spans any text; a trailing `` *`` may also match nothing (``ls *`` matches ``ls``)."""
    optional_tail = pattern.endswith(" *") and not pattern.endswith("\\ *")
    body = pattern[:-2] if optional_tail else pattern
    pieces = [re.escape(p.replace("\\*", "*")) for p in re.split(r"(?<!\\)\*", body)]
    return re.compile(".*".join(pieces) + ("(?: .*)?" if optional_tail else ""), re.DOTALL)


def _rule_words(pattern: str) -> list[str] | None:
    try:
        parts = parse_command(pattern.replace("\\*", "*"))
    except Unparsed:
        return None
    if len(parts) != 1 or not all(parts[0].literal) or parts[0].writes_file:
        return None
    return parts[0].words


def part_matches(pattern: str, part: Part) -> bool:
    """Whether one simple command matches a rule pattern (module docstring)."""
    if pattern.endswith(":*"):
        words = _rule_words(pattern[:-2])
        n = len(words) if words else 0
        return bool(words) and part.words[:n] == words and all(part.literal[:n])
    if not _has_wildcard(pattern):
        words = _rule_words(pattern)
        return words is not None and part.words == words and all(part.literal)
    joined = " ".join(
        w if lit else UNKNOWN for w, lit in zip(part.words, part.literal, strict=True)
    )
    return _wildcard_regex(pattern).fullmatch(joined) is not None


def _past_assignments(part: Part) -> Part:
    """``part`` without the variable assignments before its command name (``FOO=1 git push``
    runs ``git push``)."""
    n = command_start(part.words)
    return Part(part.words[n:], part.literal[n:], part.writes_file) if n else part


def _raw_matches(pattern: str, command: str) -> bool:
    """The pattern against the command's whole text (for rules judged without parsing)."""
    text = " ".join(command.split())
    if pattern.endswith(":*"):
        prefix = " ".join(pattern[:-2].split())
        return text == prefix or text.startswith(prefix + " ")
    if not _has_wildcard(pattern):
        return text == " ".join(pattern.replace("\\*", "*").split())
    return _wildcard_regex(pattern).fullmatch(text) is not None


def command_rule_matches(pattern: str, command: str, *, every_part: bool) -> bool:
    """Whether a rule pattern applies to ``command``.

    ``every_part=False`` (deny and ask rules): the whole text or any of its simple commands
    matches, also with the variable assignments before its command name left out.
    ``every_part=True`` (an allow rule on its own): an exact rule equal to the whole command, or
    every simple command matching with no output redirected into a file.
    """
    if not every_part:
        if _raw_matches(pattern, command):
            return True
        try:
            parts = parse_command(command)
        except Unparsed:
            return False
        return any(
            part_matches(pattern, p) or part_matches(pattern, _past_assignments(p)) for p in parts
        )
    exact = not _has_wildcard(pattern) and not pattern.endswith(":*")
    if exact and pattern.replace("\\*", "*").strip() == command.strip():
        return True  # the very text a user allowed (a remembered command, compound or not)
    try:
        parts = parse_command(command)
    except Unparsed:
        return False
    return bool(parts) and all(not p.writes_file and part_matches(pattern, p) for p in parts)


def allowed_by_rules(patterns: Sequence[str], command: str) -> bool:
    """Whether every simple command of ``command`` is matched by one of ``patterns`` (not
    necessarily the same one) and none redirects output into a file."""
    try:
        parts = parse_command(command)
    except Unparsed:
        return False
    return bool(parts) and all(
        not p.writes_file and any(part_matches(pat, p) for pat in patterns) for p in parts
    )


def parses(command: str) -> bool:
    """Whether :func:`parse_command` reads ``command`` with certainty."""
    try:
        parse_command(command)
    except Unparsed:
        return False
    return True
