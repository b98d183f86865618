"""Untrusted text made safe for a terminal: ids, names and content read from a store.

Text from a store was written by someone else (an importer, a model, another tenant's tool). Shown
raw, an escape sequence could recolour, retitle or clear the terminal, a carriage return or newline
could forge a line of a report, and a bidirectional override could make ``evil.py`` read as
``yp.live``. :func:`terminal_safe` writes each such character as a visible escape (``\\x1b``,
``\\n``, ``\\u202e``); everything else, any script included, is kept.

Rich markup is the other channel: every console of the CLI prints with markup off (``[red]x`` in
an id stays literal), and :class:`~.exits.SafeConsole` passes all the text it renders through
:func:`terminal_safe` as a last guard.
"""

from __future__ import annotations

import re

#: C0 controls, DEL and C1 controls; the bidirectional marks, embeddings, overrides and isolates;
#: zero-width characters; the Unicode line and paragraph separators.
_INVISIBLE = "\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u2028\u2029"
_ANY = re.compile(f"[\x00-\x1f{_INVISIBLE}]")
_NOT_LAYOUT = re.compile(f"[\x00-\x08\x0b-\x1f{_INVISIBLE}]")  # keeps tab and newline
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def terminal_safe(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control, bidirectional and invisible character escaped; with
    ``multiline``, newlines and tabs are kept (for message content, not for ids)."""
    return (_NOT_LAYOUT if multiline else _ANY).sub(_escape, text)


def json_safe(document: str) -> str:
    """A JSON document (``ensure_ascii=False``) with what :func:`terminal_safe` escapes written
    as ``\\uXXXX``: still the same JSON, and harmless on a terminal."""
    return _ANY.sub(lambda m: f"\\u{ord(m.group()):04x}", document)
