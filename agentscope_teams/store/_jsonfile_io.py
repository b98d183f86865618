"""Names, records and atomic file I/O of :class:`~agentscope_teams.store.jsonfile.JsonFileStore`.

Names: every directory or file name is built from :func:`~.base.path_segment` (the rule every
path made from an id follows: segments escaped to over 200 bytes become ``<first 150 bytes>#<sha256
prefix>``); directory names ending in ``.json`` or ``.stream`` get a ``#`` appended. Records: a key
file is standard JSON, one field a line, the value last; a stream line is ``{"seq": n, "text": ...}``. Writes go through a fsynced temp file and ``os.replace``.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple

from ..errors import SchemaVersionError, StoreError
from .base import Key, is_shortened, path_segment, validate_key

SCHEMA_VERSION = 1
_SUFFIXES = (".json", ".stream")
_LINE_HEAD = b'{"seq": '


# -- names ---------------------------------------------------------------------------------------


def dir_name(segment: str) -> str:
    base = path_segment(segment)
    return base + "#" if base.endswith(_SUFFIXES) else base


def name_segment(name: str) -> str | None:
    """The encoded segment behind a directory name or file stem; ``None`` when it was hashed."""
    if name.endswith("#"):
        return name[:-1]
    return None if is_shortened(name) else name


# -- records -------------------------------------------------------------------------------------


class Header(NamedTuple):
    key: Key
    version: int
    expires_at: float | None

    def live(self, now: float) -> bool:
        return self.expires_at is None or self.expires_at > now


def _payload(value: bytes) -> tuple[str, str]:
    """``("text", JSON string)`` when the value is UTF-8, else ``("b64", JSON string)``."""
    try:
        return "text", json.dumps(value.decode("utf-8"), ensure_ascii=False)
    except UnicodeDecodeError:
        return "b64", '"' + base64.b64encode(value).decode("ascii") + '"'  # nothing to escape


def damaged(where: Path, problem: str, kind: type[StoreError] = StoreError) -> StoreError:
    """A file store error: the file named for the operator, only the problem for anyone else
    (:func:`~agentscope_teams.errors.public_message`): the store's paths stay in its log."""
    return kind(
        f"{where}: {problem}",
        public=f"a file of the file store: {problem} (the server's log names the file)",
    )


def value_of(data: dict[str, Any], where: Path) -> bytes:
    if isinstance(data.get("text"), str):
        return data["text"].encode("utf-8")  # type: ignore[no-any-return]
    if isinstance(data.get("b64"), str):
        return base64.b64decode(data["b64"], validate=True)
    raise damaged(where, "record has neither 'text' nor 'b64'; restore or delete the file")


def render(key: Key, version: int, expires_at: float | None, value: bytes) -> bytes:
    """A key file: standard JSON, one field a line, the (possibly huge) value last."""
    field, payload = _payload(value)
    lines = [
        f'  "schema_version": {SCHEMA_VERSION}',
        f'  "key": {json.dumps(list(key), ensure_ascii=False)}',
        f'  "version": {version}',
        f'  "expires_at": {json.dumps(expires_at)}',
        f'  "{field}": {payload}',
    ]
    return ("{\n" + ",\n".join(lines) + "\n}\n").encode("utf-8")


def render_line(seq: int, value: bytes) -> bytes:
    """One stream line, ``{"seq": n, "text": ...}``; JSON escapes every newline inside it."""
    field, payload = _payload(value)
    return f'{{"seq": {seq}, "{field}": {payload}}}\n'.encode()


def _check_schema(data: Any, where: Path) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise damaged(where, "expected a JSON object; restore or delete the file")
    found = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(found, int) or found > SCHEMA_VERSION:
        raise damaged(
            where,
            f"schema_version {found!r} is newer than {SCHEMA_VERSION}; upgrade agentscope-teams",
            SchemaVersionError,
        )
    return data


def header_of(data: dict[str, Any], where: Path) -> Header:
    try:
        key = validate_key(data["key"])
        version, expires = data["version"], data["expires_at"]
        if not isinstance(version, int) or not isinstance(expires, int | float | None):
            raise TypeError("bad version or expires_at")
    except (KeyError, TypeError, ValueError) as exc:
        raise damaged(where, f"malformed record ({exc}); restore or delete the file") from exc
    return Header(key, version, None if expires is None else float(expires))


def parse(raw: bytes, where: Path) -> dict[str, Any]:
    try:
        return _check_schema(json.loads(raw), where)
    except ValueError as exc:
        raise damaged(where, f"not valid JSON ({exc}); restore or delete the file") from exc


def read_header(path: Path) -> Header | None:
    """The header of a key file without parsing its value; ``None`` when the file is absent."""
    try:
        f = path.open("rb")
    except FileNotFoundError:
        return None
    with f:
        lines = [f.readline() for _ in range(5)]
        if lines[0] == b"{\n" and all(line.endswith(b",\n") for line in lines[1:]):
            try:
                data = _check_schema(json.loads(b"{" + b"".join(lines[1:])[:-2] + b"}"), path)
                return header_of(data, path)
            except (ValueError, StoreError):
                pass  # hand-edited layout: fall back to parsing the whole file
        f.seek(0)
        return header_of(parse(f.read(), path), path)


def line_seq(line: bytes, where: Path) -> int:
    if line.startswith(_LINE_HEAD):
        end = line.find(b",", len(_LINE_HEAD))
        if end > 0 and line[len(_LINE_HEAD) : end].isdigit():
            return int(line[len(_LINE_HEAD) : end])
    seq = parse(line, where).get("seq")
    if not isinstance(seq, int):
        raise damaged(where, "stream line without an integer 'seq'; restore or delete it")
    return seq


# -- atomic file I/O ------------------------------------------------------------------------------


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a fsynced temp file and ``os.replace``; the caller holds the lock."""
    tmp = path.with_name(path.name + "#.tmp")
    for _ in range(100):  # a concurrent delete may remove an empty parent directory meanwhile
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            break
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
    else:
        raise damaged(tmp, "cannot be created: its directory keeps disappearing")
    with open(fd, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _rfind_newline(f: BinaryIO, end: int) -> int:
    """Offset of the last ``\\n`` before ``end`` in binary file ``f``, or -1."""
    pos = end
    while pos > 0:
        start = max(0, pos - 65536)
        f.seek(start)
        i = f.read(pos - start).rfind(b"\n")
        if i >= 0:
            return start + i
        pos = start
    return -1


def repair_tail(path: Path) -> tuple[int, bytes | None]:
    """Drop a partial last line left by a crash; return the size and the last complete line."""
    with path.open("r+b") as f:
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return 0, None
        f.seek(size - 1)
        if f.read(1) != b"\n":
            size = _rfind_newline(f, size) + 1
            f.truncate(size)
            f.flush()
            os.fsync(f.fileno())
            if size == 0:
                return 0, None
        start = _rfind_newline(f, size - 1) + 1
        f.seek(start)
        return size, f.read(size - start)
