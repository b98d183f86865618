"""The files a shell command's recognized file commands read or change, as Claude Code applies
``Read`` and ``Edit`` deny rules to "file commands Claude Code recognizes in Bash, such as cat,
head, tail, and sed".

For each simple command a command runs (wrappers seen through: ``sudo tail``, ``bash -c 'sed
...'``; :func:`~.command_rules.commands_run`):

* :func:`files_read`: the file operands of a program in :data:`READERS` (the words after the
  options and after ``--``, less the script or pattern that comes first for
  :data:`SCRIPT_FIRST` programs unless an option gave it, less ``cp``'s destination), and the
  file of an input redirection (``wc -l < .env``);
* :func:`files_written`: the file of an output redirection (``> out``, ``>> log``), the file
  operands of a program in :data:`WRITERS` (``tee``, ``touch``, ``rm``, ``mv``...), ``cp``'s
  destination, ``sed -i``'s files, ``dd of=``.

Words with expansions (``cat $F``) are unknown and not listed, nor what a program opens itself
(``python3 -c "open('.env')"``, a script). A ``~`` at the start of a word is the home
directory, as the shell expands it.
"""

from __future__ import annotations

import os

from .command_rules import commands_run
from .shell_parse import Part, Unparsed

__all__ = ["READERS", "SCRIPT_FIRST", "WRITERS", "files_read", "files_written"]

SCRIPT_FIRST = frozenset({"sed", "grep", "egrep", "fgrep", "rg", "awk", "gawk", "mawk", "jq"})
"""Readers whose first operand is a script or pattern, not a file (unless an option gave it)."""

READERS = SCRIPT_FIRST | frozenset(
    {
        "cat", "tac", "head", "tail", "less", "more", "nl", "wc", "sort", "uniq", "cut", "od",
        "xxd", "hexdump", "strings", "base64", "base32", "md5sum", "sha1sum", "sha256sum",
        "sha512sum", "diff", "cmp", "comm", "paste", "fold", "fmt", "column", "cp", "zcat",
        "bzcat", "xzcat", "zless", "view",
    }
)  # fmt: skip
"""Programs whose operands are files they read (``cp``: all but the last)."""

WRITERS = frozenset({"tee", "touch", "truncate", "rm", "unlink", "shred", "mv"})
"""Programs whose operands are files they change (``mv``: its sources too)."""

_SCRIPT_OPTIONS = ("-e", "-f", "--expression", "--file", "--regexp")


def _parts(command: str) -> list[Part]:
    try:
        return commands_run(command)[0]
    except Unparsed:
        return []  # the engine asks for such a command when a deny rule exists anyway


def _operands(part: Part) -> tuple[str, list[str | None], list[str]]:
    """(program name, operands (None: an expansion), options) of ``part``."""
    operands: list[str | None] = []
    options: list[str] = []
    options_end = False
    for word, literal in zip(part.words[1:], part.literal[1:], strict=False):
        if not options_end and word == "--":
            options_end = True
        elif not options_end and word.startswith("-") and word != "-":
            options.append(word)
        else:
            operands.append(word if literal else None)
    return os.path.basename(part.words[0]), operands, options


def files_read(command: str) -> list[str]:
    """The files the recognized file commands of ``command`` read (module docstring)."""
    found: list[str | None] = []
    for part in _parts(command):
        found += part.read
        if not part.words:
            continue
        program, operands, options = _operands(part)
        if program not in READERS:
            continue
        if program in SCRIPT_FIRST and not any(o.startswith(_SCRIPT_OPTIONS) for o in options):
            operands = operands[1:]
        found += operands[:-1] if program == "cp" else operands
    return [_home(w) for w in found if w is not None]


def files_written(command: str) -> list[str]:
    """The files the recognized file commands of ``command`` change (module docstring)."""
    found: list[str | None] = []
    for part in _parts(command):
        found += part.written
        if not part.words:
            continue
        program, operands, options = _operands(part)
        if program in WRITERS:
            found += operands
        elif program == "cp":
            found += operands[-1:]
        elif program == "sed" and any(o.startswith(("-i", "--in-place")) for o in options):
            scripted = any(o.startswith(_SCRIPT_OPTIONS) for o in options)
            found += operands if scripted else operands[1:]
        elif program == "dd":
            found += [w[3:] for w in operands if w is not None and w.startswith("of=")]
    return [_home(w) for w in found if w is not None]


def _home(word: str) -> str:
    return os.path.expanduser(word) if word == "~" or word.startswith("~/") else word
