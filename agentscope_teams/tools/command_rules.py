"""Claude Code's Bash permission rules, and the shell parsing they rest on.

A rule's pattern is one of:

* ``git diff:*`` — a prefix: the command's first words are ``git diff`` (word boundary: ``git
  diffx`` does not match);
* ``npm run test`` — exact: those words and nothing more;
* a pattern with ``*`` elsewhere (``git * main``, ``ls *``) — a wildcard over the command's words
  joined by spaces; a trailing `` *`` also matches the bare command (``ls *`` matches ``ls``).
  ``\\*`` is a literal star (remembered rules escape the stars of the command they allow).

A command is split into the simple commands it runs: parts joined by ``;``, ``&&``, ``||``,
``|``, ``|&``, ``&`` or newlines, and the commands inside ``$(...)``, backticks, ``<(...)`` and
``>(...)``. A rule matches a part by its words after quote removal (``git "diff"`` is ``git diff``);
a word holding an expansion (``$X``, ``$(...)``) has no known value and matches only a ``*``.
Redirections to ``/dev/null`` and between descriptors (``2>&1``) are harmless; an output
redirection to a file (``>``, ``>>``, ``&>``) writes that file, so prefix rules do not allow it.

What :func:`parse_command` cannot read with certainty — heredocs, subshells and ``{ }`` groups,
``if``/``for``/``while``/``case``, ``$((...))``, ``${...}`` holding a substitution, ``$'...'``,
unterminated quotes, a command name that is itself an expansion — is :class:`Unparsed`: no
prefix or wildcard rule allows it (the user is asked), and if a deny rule for the tool exists the
engine asks too, since it cannot tell whether that rule applies.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["Part", "Unparsed", "command_rule_matches", "escape_command", "parse_command"]

#: Stands for a word whose value is only known when the shell runs (an expansion).
UNKNOWN = "\x00"

RESERVED = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "case",
        "esac",
        "for",
        "select",
        "while",
        "until",
        "do",
        "done",
        "function",
        "time",
        "coproc",
        "{",
        "}",
        "[[",
        "]]",
        "!",
    ]
)
_OPERATOR_ENDS = set(";&|\n")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


class Unparsed(ValueError):
    """The command cannot be split into simple commands with certainty (the reason is the text)."""


@dataclass
class Part:
    """One simple command: its words (``UNKNOWN`` inside words with expansions) and whether it
    redirects output into a file."""

    words: list[str] = field(default_factory=list)
    literal: list[bool] = field(default_factory=list)
    writes_file: bool = False


class _Parser:
    def __init__(self, text: str, depth: int) -> None:
        if depth > 8:
            raise Unparsed("substitutions nested too deeply")
        self.text, self.depth, self.i = text, depth, 0
        self.parts: list[Part] = []  # finished simple commands (substitutions' included)
        self.cur = Part()
        self.word: list[str] = []
        self.in_word = False
        self.word_literal = True
        self.redirect: str | None = None  # "out" or "in": the next word is a redirection target

    # -- words and commands ----------------------------------------------------------------------

    def end_word(self) -> None:
        if not self.in_word:
            return
        word, literal = "".join(self.word), self.word_literal
        self.word, self.in_word, self.word_literal = [], False, True
        if self.redirect is not None:
            if self.redirect == "out" and not (literal and word == "/dev/null"):
                self.cur.writes_file = True
            self.redirect = None
            return
        self.cur.words.append(word)
        self.cur.literal.append(literal)

    def end_command(self) -> None:
        self.end_word()
        if self.redirect is not None:
            raise Unparsed("a redirection without a target")
        part = self.cur
        self.cur = Part()
        if not part.words and not part.writes_file:
            return
        if part.words and (part.words[0] in RESERVED and part.literal[0]):
            raise Unparsed(f"shell keyword {part.words[0]!r}")
        name = next(
            (i for i, w in enumerate(part.words) if not _ASSIGNMENT.match(w)), len(part.words)
        )
        if name < len(part.words) and not part.literal[name]:
            raise Unparsed("the command name is an expansion")
        self.parts.append(part)

    def add(self, text: str, literal: bool = True) -> None:
        self.word.append(text)
        self.in_word = True
        self.word_literal = self.word_literal and literal

    def substitution(self, body: str) -> None:
        self.parts.extend(parse_command(body, self.depth + 1))
        self.add(UNKNOWN, literal=False)

    # -- scanning --------------------------------------------------------------------------------

    def peek(self, n: int = 1) -> str:
        return self.text[self.i + n : self.i + n + 1]

    def run(self) -> list[Part]:
        while self.i < len(self.text):
            self.step(self.text[self.i])
        self.end_command()
        return self.parts

    def step(self, c: str) -> None:
        if c in " \t":
            self.end_word()
        elif c in _OPERATOR_ENDS:
            self.operator(c)
            return
        elif c == "#" and not self.in_word:
            end = self.text.find("\n", self.i)
            self.i = len(self.text) if end < 0 else end
            return
        elif c == "'":
            end = self.text.find("'", self.i + 1)
            if end < 0:
                raise Unparsed("an unterminated single quote")
            self.add(self.text[self.i + 1 : end])
            self.in_word = True
            self.i = end
        elif c == '"':
            self.double_quoted()
        elif c == "\\":
            nxt = self.peek()
            if nxt != "\n":
                self.add(nxt)
            self.i += 1
        elif c == "`":
            self.backtick()
        elif c == "$":
            self.dollar()
        elif c in "<>":
            self.redirection(c)
            return
        elif c in "()":
            raise Unparsed("a subshell or function definition")
        else:
            self.add(c)
        self.i += 1

    def operator(self, c: str) -> None:
        two = self.text[self.i : self.i + 2]
        if two == ";;" or two == ";&":
            raise Unparsed("a case clause terminator")
        if two == "&>":
            self.end_word()
            self.redirect = "out"
            self.i += 3 if self.text[self.i : self.i + 3] == "&>>" else 2
            return
        self.end_command()
        self.i += 2 if two in ("&&", "||", "|&") else 1

    def double_quoted(self) -> None:
        self.in_word = True
        self.i += 1
        while self.i < len(self.text):
            c = self.text[self.i]
            if c == '"':
                return
            if c == "\\" and self.peek() in ('"', "\\", "$", "`", "\n"):
                if self.peek() != "\n":
                    self.add(self.peek())
                self.i += 2
                continue
            if c == "`":
                self.backtick()
            elif c == "$":
                self.dollar()
            else:
                self.add(c)
            self.i += 1
        raise Unparsed("an unterminated double quote")

    def backtick(self) -> None:
        body: list[str] = []
        j = self.i + 1
        while j < len(self.text) and self.text[j] != "`":
            if self.text[j] == "\\" and j + 1 < len(self.text):
                body.append(self.text[j + 1])
                j += 2
                continue
            body.append(self.text[j])
            j += 1
        if j >= len(self.text):
            raise Unparsed("an unterminated backtick substitution")
        self.substitution("".join(body))
        self.i = j

    def dollar(self) -> None:
        nxt = self.peek()
        if nxt == "(":
            if self.peek(2) == "(":
                raise Unparsed("an arithmetic expansion")
            end = _closing(self.text, self.i + 2)
            self.substitution(self.text[self.i + 2 : end])
            self.i = end
        elif nxt == "{":
            end = self.text.find("}", self.i)
            body = self.text[self.i : end] if end >= 0 else ""
            if end < 0 or "$(" in body or "`" in body or "<(" in body:
                raise Unparsed("a parameter expansion holding a substitution")
            self.add(UNKNOWN, literal=False)
            self.i = end
        elif nxt == "'":
            raise Unparsed("an ANSI-C quoted string")
        elif m := re.match(r"[A-Za-z_][A-Za-z0-9_]*|[0-9?$!#@*-]", self.text[self.i + 1 :]):
            self.add(UNKNOWN, literal=False)
            self.i += len(m.group(0))
        else:
            self.add("$")

    def redirection(self, c: str) -> None:
        if self.peek() == "(":  # process substitution <(...) / >(...)
            end = _closing(self.text, self.i + 2)
            self.substitution(self.text[self.i + 2 : end])
            self.i = end + 1
            return
        if self.in_word and self.word_literal and "".join(self.word).isdigit():
            self.word, self.in_word = [], False  # "2>" : a descriptor number, not a word
        self.end_word()
        rest = self.text[self.i : self.i + 3]
        if rest.startswith("<<") or rest.startswith("<>"):
            raise Unparsed("a heredoc or read-write redirection")
        if rest[:2] in (">&", "<&"):
            m = re.match(r"[0-9]+-?|-", self.text[self.i + 2 :])
            if m is None:
                raise Unparsed("a descriptor redirection to a file")
            self.i += 2 + len(m.group(0))
            return
        self.redirect = "out" if c == ">" else "in"
        self.i += 2 if rest[:2] in (">>", ">|") else 1


def _closing(text: str, start: int) -> int:
    """Index of the ``)`` closing a ``(`` just before ``start``, skipping quoted text."""
    depth, i = 1, start
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                break
            i = end
        elif c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise Unparsed("an unterminated substitution")


def parse_command(text: str, depth: int = 0) -> list[Part]:
    """The simple commands ``text`` runs (substitutions' included); raises :class:`Unparsed`."""
    return _Parser(text, depth).run()


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
    matches. ``every_part=True`` (an allow rule on its own): an exact rule equal to the whole
    command, or every simple command matching with no output redirected into a file.
    """
    if not every_part:
        if _raw_matches(pattern, command):
            return True
        try:
            return any(part_matches(pattern, p) for p in parse_command(command))
        except Unparsed:
            return False
    if not _has_wildcard(pattern) and not pattern.endswith(":*") and _raw_matches(pattern, command):
        return True
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
