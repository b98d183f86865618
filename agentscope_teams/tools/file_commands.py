"""The files a shell command's recognized file commands read, as Claude Code applies ``Read``
deny rules to "file commands Claude Code recognizes in Bash, such as cat, head, tail, and sed".

:func:`files_read` lists, for each simple command a command runs (wrappers seen through:
``sudo tail``, ``bash -c 'sed ...'``; :func:`~.command_rules.commands_run`) whose program is in
:data:`READERS`, its words that name files: the words after the options (and after ``--``),
less the script or pattern that comes first for :data:`SCRIPT_FIRST` programs (``sed``,
``grep``, ``awk``...) unless an option gave it (``-e``, ``-f``), and less the destination of
``cp``. Words with expansions (``cat $F``) are unknown and not listed; input redirections
(``cat < .env``) and what a program opens itself (``python3 -c "open('.env')"``, a script) are
not seen. A ``~`` at the start of a word is the home directory, as the shell expands it.
"""

from __future__ import annotations

import os

from .command_rules import commands_run
from .shell_parse import Unparsed

__all__ = ["READERS", "SCRIPT_FIRST", "files_read"]

SCRIPT_FIRST = frozenset({"sed", "grep", "egrep", "fgrep", "rg", "awk", "gawk", "mawk", "jq"})
"""Readers whose first operand is a script or pattern, not a file (unless an option gave it)."""

READERS = SCRIPT_FIRST | frozenset(
    {
        "cat", "tac", "head", "tail", "less", "more", "nl", "wc", "sort", "uniq", "cut", "od",
        "xxd", "hexdump", "strings", "base64", "base32", "md5sum", "sha1sum", "sha256sum",
        "sha512sum", "diff", "cmp", "comm", "paste", "fold", "fmt", "column", "tr", "cp", "zcat",
        "bzcat", "xzcat", "zless", "view",
    }
)  # fmt: skip
"""Programs whose operands are files they read (``cp``: all but the last)."""

_SCRIPT_OPTIONS = ("-e", "-f", "--expression", "--file", "--regexp")


def files_read(command: str) -> list[str]:
    """The files the recognized file commands of ``command`` read (module docstring); [] if it
    cannot be parsed (the engine asks for such a command when a deny rule exists anyway)."""
    try:
        parts, _ = commands_run(command)
    except Unparsed:
        return []
    found: list[str] = []
    for part in parts:
        if not part.words:
            continue
        program = os.path.basename(part.words[0])
        if program not in READERS:
            continue
        operands: list[str | None] = []
        scripted = False
        options_end = False
        for word, literal in zip(part.words[1:], part.literal[1:], strict=False):
            if not options_end and word == "--":
                options_end = True
            elif not options_end and word.startswith("-") and word != "-":
                scripted = scripted or word.startswith(_SCRIPT_OPTIONS)
            else:
                operands.append(word if literal else None)
        if program in SCRIPT_FIRST and not scripted:
            operands = operands[1:]
        if program == "cp":
            operands = operands[:-1]
        found += [_home(w) for w in operands if w is not None]
    return found


def _home(word: str) -> str:
    return os.path.expanduser(word) if word == "~" or word.startswith("~/") else word
