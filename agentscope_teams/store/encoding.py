"""Key encoding: how a key's segments become strings that are safe as file names, Redis names,
glob patterns and cluster hash tags, and how an id becomes one path component.

:func:`encode_segment` is injective and escapes every reserved character; :func:`path_segment` is
the one rule for a directory or file name made from an id (long ones shortened with a hash).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

Key = tuple[str, ...]

# Characters escaped in a segment, besides '%' itself and control characters. '/' is the separator;
# the rest keeps encodings safe as file names, Redis glob patterns and cluster hash tags.
_RESERVED = frozenset('/\\:*?"<>|{}[]#')
# Every escaped character is ASCII, so it is one byte: %XX of its code point.
_ESCAPES = {c: f"%{c:02X}" for c in [*range(0x20), 0x7F, ord("%"), *(ord(ch) for ch in _RESERVED)]}
_NEEDS_ESCAPE = re.compile("[" + "".join(re.escape(chr(c)) for c in _ESCAPES) + "]")


def validate_key(key: Sequence[str], what: str = "key") -> Key:
    """Return ``key`` as a tuple after checking it; raise ``ValueError`` naming the bad segment."""
    if isinstance(key, str) or not isinstance(key, Sequence):
        raise ValueError(f"{what} must be a tuple of strings, got {key!r}")
    if len(key) == 0:
        raise ValueError(f"{what} must have at least one segment")
    for i, seg in enumerate(key):
        if not isinstance(seg, str):
            raise ValueError(f"{what} segment {i} must be a string, got {type(seg).__name__}")
        if seg == "":
            raise ValueError(
                f"{what} segment {i} is empty; every segment needs at least one character"
            )
        if "\x00" in seg:
            raise ValueError(f"{what} segment {i} {seg!r} contains NUL, which no backend can store")
    return tuple(key)


def validate_prefix(prefix: Sequence[str]) -> Key:
    """Like :func:`validate_key` but an empty prefix (everything) is allowed."""
    return () if len(prefix) == 0 else validate_key(prefix, "prefix")


def encode_segment(segment: str) -> str:
    """Escape one segment: reserved characters, '%', controls, and the dot-only names become %XX."""
    if segment in (".", ".."):
        return segment.replace(".", "%2E")
    if _NEEDS_ESCAPE.search(segment) is None:  # the common case: nothing to escape
        return segment
    return segment.translate(_ESCAPES)


def decode_segment(encoded: str) -> str:
    """Inverse of :func:`encode_segment`."""
    if "%" not in encoded:
        return encoded
    raw = bytearray()
    i = 0
    while i < len(encoded):
        ch = encoded[i]
        if ch == "%":
            raw.append(int(encoded[i + 1 : i + 3], 16))
            i += 3
        else:
            raw.extend(ch.encode())
            i += 1
    return raw.decode()


# Escaped segments up to this many UTF-8 bytes name files as they are: room for suffixes (".json",
# "#.tmp") under the usual 255-byte limit, and every name used so far stays unchanged.
PATH_SEGMENT_MAX_BYTES = 200
_PATH_HASH_HEX = 32  # 128 bits of SHA-256


def path_segment(segment: str, max_bytes: int = PATH_SEGMENT_MAX_BYTES) -> str:
    """One id or key segment as one path component: the one rule for every name made from an id.

    The escaped segment (:func:`encode_segment`) when its UTF-8 form fits in ``max_bytes``: readable,
    injective, and never ``.``, ``..`` or a name holding ``/``, so it cannot leave its directory.
    A longer one becomes its first ``max_bytes * 3 // 4`` bytes (cut at a character boundary), ``#``
    and 128 bits of the SHA-256 of the whole escaped segment, at most ``max_bytes * 3 // 4 + 33``
    bytes. ``#`` never occurs in an escaped segment, so a shortened name never equals a kept one
    (see :func:`is_shortened`); the hash keeps shortened names of different segments apart.
    """
    enc = encode_segment(segment)
    raw = enc.encode()
    if len(raw) <= max_bytes:
        return enc
    head = raw[: max_bytes * 3 // 4].decode("utf-8", "ignore")
    return f"{head}#{hashlib.sha256(raw).hexdigest()[:_PATH_HASH_HEX]}"


def is_shortened(name: str) -> bool:
    """Whether a :func:`path_segment` name was shortened (it cannot be decoded back to the id)."""
    return "#" in name


def encode_key(key: Key) -> str:
    """One string per key, '/'-joined escaped segments; injective and order-preserving per segment."""
    return "/".join(encode_segment(s) for s in key)


def decode_key(encoded: str) -> Key:
    return tuple(decode_segment(s) for s in encoded.split("/"))


def encode_prefix(prefix: Key) -> str:
    """The string prefix shared by the encodings of every key under ``prefix`` ('' for all keys)."""
    return encode_key(prefix) + "/" if prefix else ""
