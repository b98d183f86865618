"""Splitting a shell command into the simple commands it runs, for Bash permission rules.

A command is split at ``;``, ``&&``, ``||``, ``|``, ``|&``, ``&`` and newlines, and the commands
inside ``$(...)``, backticks, ``<(...)`` and ``>(...)`` are parts of their own. Each part keeps its
words after quote removal (``git "diff"`` is ``git diff``); a word holding an expansion (``$X``,
``$(...)``) is marked as not literal, its value being known only when the shell runs. Redirections
to ``/dev/null`` and between descriptors (``2>&1``) are dropped; an output redirection to a file
(``>``, ``>>``, ``&>``) marks the part as writing a file. A word holding an unquoted brace
expansion (``{a,b}``, ``{1..3}``) is not literal either, nor a command name that is a glob
(``/usr/bin/gi?``), and ``$"..."`` is read as ``"..."``. A pipeline's ``time``, ``time -p`` and
``!`` are left out (``time git push`` runs ``git push``).

What cannot be read with certainty — heredocs, subshells and ``{ }`` groups, ``if``/``for``/
``while``/``case``, ``$((...))``, ``${...}`` holding a substitution, ``$'...'``, unterminated
quotes, a command name that is itself an expansion — raises :class:`Unparsed`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["UNKNOWN", "Part", "Unparsed", "parse_command"]

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
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=")  # X=1 X+=1 a[0]=1
_BRACES = re.compile(r"\{[^{}]*(?:,|\.\.)[^{}]*\}")  # brace expansion: {a,b} {1..3}
_GLOB = re.compile(r"[*?]|\[.*\]")  # a lone [ (the test command) is no pattern


def command_start(words: Sequence[str]) -> int:
    """The index of the command name among a simple command's ``words``: past the variable
    assignments before it (``FOO=1 git push`` runs ``git``); ``len(words)`` when all are."""
    return next((i for i, w in enumerate(words) if not _ASSIGNMENT.match(w)), len(words))


class Unparsed(ValueError):
    """The command cannot be split into simple commands with certainty (the reason is the text)."""


@dataclass
class Part:
    """One simple command: its words (``UNKNOWN`` inside words with expansions), whether it
    redirects output into a file, and the files its redirections write (``> out``) and read
    (``< in``), None for a target with expansions."""

    words: list[str] = field(default_factory=list)
    literal: list[bool] = field(default_factory=list)
    writes_file: bool = False
    written: list[str | None] = field(default_factory=list)
    read: list[str | None] = field(default_factory=list)


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
        self.bare: list[str] = []  # the current word's unquoted characters (brace/glob patterns)

    # -- words and commands ----------------------------------------------------------------------

    def end_word(self) -> None:
        if not self.in_word:
            return
        word, literal, bare = "".join(self.word), self.word_literal, "".join(self.bare)
        self.word, self.in_word, self.word_literal, self.bare = [], False, True, []
        if _BRACES.search(bare) or (
            _GLOB.search(bare)
            and command_start(self.cur.words) == len(self.cur.words)
            and not _ASSIGNMENT.match(word)
        ):
            literal = False  # `{git,push}`, `git{,}`, `/usr/bin/gi?`: known when the shell runs
        if self.redirect is not None:
            if self.redirect == "out" and not (literal and word == "/dev/null"):
                self.cur.writes_file = True
                self.cur.written.append(word if literal else None)
            elif self.redirect == "in":
                self.cur.read.append(word if literal else None)
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
        while part.words[:1] in (["time"], ["!"]) and part.literal[0]:  # a pipeline's prefix
            n = 2 if part.words[:2] == ["time", "-p"] else 1
            part.words, part.literal = part.words[n:], part.literal[n:]
        if not part.words and not part.writes_file:
            return
        if part.words and (part.words[0] in RESERVED and part.literal[0]):
            raise Unparsed(f"shell keyword {part.words[0]!r}")
        name = command_start(part.words)
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
        elif c == "$" and self.peek() == '"':
            pass  # $"...": a locale-translated string, read as the double-quoted one it is
        elif c == "$":
            self.dollar()
        elif c in "<>":
            self.redirection(c)
            return
        elif c in "()":
            raise Unparsed("a subshell or function definition")
        else:
            self.add(c)
            self.bare.append(c)
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
