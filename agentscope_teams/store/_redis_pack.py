"""Packing a command of the lean path (:mod:`._redis_lean`) for the wire, byte for byte as
redis-py's ``Connection.pack_command`` packs it, with less client CPU (issue 27).

A command of one word whose arguments are bytes, str, int and float (exact types: a subclass, an
enum member say, redis-py encodes from its ``repr``) is packed by ``hiredis`` from its tuple when the
connection's encoding is UTF-8 (strict): hiredis encodes those four types as redis-py's encoder does.
Others take redis-py's packer (its errors for a value it cannot encode), as do all commands when
hiredis is not installed.

A script call (``EVALSHA``, ``FCALL``) repeats most of its arguments call after call: the script,
its keys, its limits; a usage ``ADMIT`` changes only its reservation id and amounts. Its arguments
are packed one by one and kept per script (the last call's): the next call packs only the
arguments that are not the very objects the last one had (an ``is`` test in C over the tuple), and
joins. An argument is an immutable object of an exact type above, so the same object packs to the
same bytes. A script whose call packs to more than :data:`KEEP_BYTES` (a session's document), or
changes more than a quarter of its arguments from one call to the next (a session's keys and
versions), is packed by hiredis, as other commands: for it that costs less.

A caller that knows which arguments change packs the rest once: :func:`template` packs a script
call but for the arguments at its slots, and :meth:`Template.fill` formats only those into it
(a riding usage ``ADMIT``: its reservation id and amounts; :meth:`RedisConnection.ride_packed
<agentscope_teams.store._redis_conn.RedisConnection.ride_packed>`). Its bytes are sent as they
are on a connection of UTF-8 (strict) encoding, packed again from the command on another.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, compress
from operator import is_not
from typing import Any

from redis.utils import HIREDIS_AVAILABLE

pack_command: Any = None
if HIREDIS_AVAILABLE:  # the redis extra installs hiredis
    from hiredis import pack_command

#: The argument types packed here byte for byte as redis-py's encoder packs them.
_PLAIN = frozenset({bytes, str, int, float})
#: The names of UTF-8 an encoder may have (with ``encoding_errors`` "strict": hiredis's, a
#: template's packing).
_UTF8 = frozenset({"utf-8", "utf8", "UTF-8", "UTF8"})
_SCRIPT_CALLS = frozenset({"EVALSHA", "FCALL"})
#: A script call whose packed arguments are longer than this is not kept (a session's document).
KEEP_BYTES = 2048
#: The last call's arguments and their packed forms, per script (SHA or function name); None:
#: a script whose call was longer than KEEP_BYTES.
_KEPT: dict[str, tuple[tuple[Any, ...], list[bytes]] | None] = {}
#: Scripts kept at most (a process runs few scripts; past this the kept ones are dropped).
KEEP_SCRIPTS = 256
#: Not seen yet (a script absent from _KEPT).
_NEW: Any = object()


def pack(conn: Any, args: tuple[Any, ...]) -> list[bytes]:
    """``conn.pack_command(*args)`` (module docs)."""
    name = args[0]
    if pack_command is None or type(name) is not str or " " in name:
        return conn.pack_command(*args)  # type: ignore[no-any-return]
    if not utf8_strict(conn):
        encoder = conn.encoder
        return _pack_encoded(conn, args, encoder.encoding, encoder.encoding_errors)
    if type(args) is not tuple:
        args = tuple(args)
    if name in _SCRIPT_CALLS and len(args) > 1 and type(args[1]) is str:
        kept = _KEPT.get(args[1], _NEW)
        if kept is not None:
            found = _first_call(args) if kept is _NEW else _again(args, kept)
            if found is not None:
                return [found]
    if _PLAIN.issuperset(map(type, args)):
        return [pack_command(args)]
    return conn.pack_command(*args)  # type: ignore[no-any-return]


def utf8_strict(conn: Any) -> bool:
    """Whether ``conn`` encodes as UTF-8, strict: then hiredis packs its commands and a
    :class:`Template`'s bytes are what redis-py would send."""
    encoder = conn.encoder
    return encoder.encoding in _UTF8 and encoder.encoding_errors == "strict"


def _again(args: tuple[Any, ...], kept: tuple[tuple[Any, ...], list[bytes]]) -> bytes | None:
    """A script call packed from its script's last call's ``kept`` parts, the arguments that are
    other objects packed anew (None: hiredis packs it: an argument of a type not packed here, or
    more than a quarter of them new, which hiredis packs for less, and from now on every call of
    the script)."""
    last, parts = kept
    n = len(args)
    if len(last) != n:
        return _first_call(args)
    changed = [*compress(range(n), map(is_not, args, last))]
    if len(changed) > n // 4:
        _KEPT[args[1]] = None
        return None
    parts = parts.copy()
    for i in changed:
        part = _bulk(args[i])
        if part is None:
            return None
        parts[i] = part if i else b"*%d\r\n%b" % (n, part)
    _KEPT[args[1]] = (args, parts)
    return b"".join(parts)


def _first_call(args: tuple[Any, ...]) -> bytes | None:
    """A script call packed argument by argument, its parts kept for the next call (None: an
    argument of a type not packed here)."""
    parts = []
    for arg in args:
        part = _bulk(arg)
        if part is None:
            return None
        parts.append(part)
    parts[0] = b"*%d\r\n%b" % (len(args), parts[0])
    packed = b"".join(parts)
    script = args[1]
    if len(_KEPT) >= KEEP_SCRIPTS and script not in _KEPT:
        _KEPT.clear()
    _KEPT[script] = (args, parts) if len(packed) <= KEEP_BYTES else None
    return packed


def _bulk(arg: Any) -> bytes | None:
    """One argument as a RESP bulk string (None: a type not packed here)."""
    kind = type(arg)
    if kind is str:
        data = arg.encode()
    elif kind is int:
        data = b"%d" % arg
    elif kind is bytes:
        data = arg
    elif kind is float:  # a rate limit's turns per minute, a hold-off's ms
        data = repr(arg).encode()
    else:
        return None
    return b"$%d\r\n%b\r\n" % (len(data), data)


def _pack_encoded(conn: Any, args: tuple[Any, ...], encoding: str, errors: str) -> list[bytes]:
    """:func:`pack` for a connection of another encoding: each argument encoded here, the
    tuple packed by hiredis."""
    out = [args[0].encode()]
    for arg in args[1:]:
        kind = type(arg)
        if kind is bytes:
            out.append(arg)
        elif kind is str:
            out.append(arg.encode(encoding, errors))
        elif kind is int:
            out.append(b"%d" % arg)
        elif kind is float:
            out.append(repr(arg).encode())
        else:
            return conn.pack_command(*args)  # type: ignore[no-any-return]
    return [pack_command(tuple(out))]


#: The types a :class:`Template` fills a slot with: ``str(value)`` is what redis-py encodes.
_TEXT = frozenset({str, int, float})
_SLOT = b"$%d\r\n%b\r\n"


class Template:
    """The command of ``script`` on ``keys`` and ``args`` packed once but for the arguments at
    ``slots`` (indexes into ``args``), made by :func:`template`: a call of one shape (a usage
    ``ADMIT`` of the same budgets, limits and limiter) fills in only its own values
    (:meth:`fill`) instead of packing, or comparing, every argument (issue 27). Byte for byte
    redis-py's packing of the same command on a connection of UTF-8 (strict) encoding
    (:func:`utf8_strict`; on another the command is packed as any other)."""

    __slots__ = ("args", "format", "keys", "script", "slots")

    def __init__(
        self, script: Any, keys: Sequence[Any], args: tuple[Any, ...], slots: tuple[int, ...]
    ) -> None:
        self.script, self.keys, self.args, self.slots = script, keys, args, slots
        #: The packed command, a ``%`` format: ``$<length>\r\n<value>\r\n`` at each slot.
        self.format = b""

    def fill(self, values: tuple[Any, ...]) -> bytes | None:
        """The command with ``values`` at its slots, packed (None: a value of a type other than
        str, int or float: pack it as any command)."""
        if not _TEXT.issuperset(map(type, values)):
            return None
        data = [*map(str.encode, map(str, values))]
        return self.format % (*chain.from_iterable(zip(map(len, data), data, strict=True)),)

    def arguments(self, values: tuple[Any, ...]) -> list[Any]:
        """The script's arguments with ``values`` at its slots."""
        args = [*self.args]
        for i, value in zip(self.slots, values, strict=True):
            args[i] = value
        return args


def template(
    script: Any, keys: Sequence[Any], args: Sequence[Any], slots: tuple[int, ...]
) -> Template | None:
    """The :class:`Template` of ``script``'s command (``script.command(keys, args)``, whose
    last ``len(args)`` arguments are ``args``) with ``args[i]`` for each ``i`` of ``slots`` left
    to fill (None: an argument of a type not packed here)."""
    command = script.command(keys, args)
    first = len(command) - len(args)
    at = {first + i for i in slots}
    parts = [b"*%d\r\n" % len(command)]
    for i, arg in enumerate(command):
        part = _bulk(arg)
        if part is None:
            return None
        parts.append(_SLOT if i in at else part.replace(b"%", b"%%"))
    made = Template(script, keys, tuple(args), slots)
    made.format = b"".join(parts)
    return made
