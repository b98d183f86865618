"""The per-dialect write statements of :class:`~agentscope_teams.store.sql.SqlStore`.

* ``put(expected_version=None)``: one upsert (``ON CONFLICT DO UPDATE ... RETURNING`` on PostgreSQL
  and SQLite, ``ON DUPLICATE KEY UPDATE version = LAST_INSERT_ID(...)`` on MySQL); the version
  restarts at 1 over an expired row.
* ``put(expected_version=0)``: PostgreSQL/SQLite ``INSERT ... ON CONFLICT DO UPDATE ... WHERE
  expired RETURNING``; MySQL ``INSERT``, and on a duplicate key ``DELETE`` the row if expired and
  ``INSERT`` again, in one transaction.
* ``put(expected_version=n)``: ``UPDATE ... WHERE khash = ? AND version = n AND live``.
* ``append``: the stream's counter row is bumped with an upsert (on PostgreSQL the bump and the insert
  are one statement, a data-modifying CTE).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    LargeBinary,
    and_,
    case,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from ..base import Key, encode_key
from .dialect import mysql_code
from .schema import HEAD_BYTES, Tables


@dataclass(frozen=True, slots=True)
class Ref:
    """A key with its byte encoding and the SHA-256 of it (the primary key)."""

    key: Key
    ekey: bytes
    h: bytes


def ref(key: Key) -> Ref:
    enc = encode_key(key).encode()
    return Ref(key, enc, hashlib.sha256(enc).digest())


class Statements:
    """Statements over one set of tables for one kind of database (``kind`` as in ``dialect``).

    ``now`` is the database server's clock; ``live`` / ``expired`` compare ``expires_at`` with it.
    """

    def __init__(self, t: Tables, kind: str, now: ColumnElement[float], dialect: Dialect) -> None:
        self.t = t
        self.kind = kind
        self.now = now
        self._dialect = dialect  # MariaDB learns delete_returning only when it first connects

    def live(self) -> ColumnElement[bool]:
        c = self.t.kv.c
        return or_(c.expires_at.is_(None), c.expires_at > self.now)

    def expired(self) -> ColumnElement[bool]:
        c = self.t.kv.c
        return and_(c.expires_at.is_not(None), c.expires_at <= self.now)

    def row(self, ref: Ref, inline: bytes, nparts: int, ttl: float | None) -> dict[str, Any]:
        return {
            "khash": ref.h,
            "khead": ref.ekey[:HEAD_BYTES],
            "ekey": ref.ekey,
            "value": inline,
            "nparts": nparts,
            "expires_at": None if ttl is None else self.now + ttl,
        }

    async def write_row(
        self, conn: AsyncConnection, ref: Ref, row: dict[str, Any], expected: int | None
    ) -> int | None:
        """Write the row if ``expected`` holds; return the new version or None."""
        if expected:
            return await self._update(conn, ref, row, expected)
        if self.kind != "mysql":
            return await self._upsert(conn, row, create_only=expected == 0)
        if expected is None:
            return await self._mysql_upsert(conn, row)
        return await self._mysql_create(conn, ref, row)

    async def _update(
        self, conn: AsyncConnection, ref: Ref, row: dict[str, Any], expected: int
    ) -> int | None:
        c = self.t.kv.c
        stmt = (
            update(self.t.kv)
            .where(c.khash == ref.h, c.version == expected, self.live())
            .values(
                value=row["value"],
                nparts=row["nparts"],
                version=c.version + 1,
                expires_at=row["expires_at"],
            )
        )
        return expected + 1 if (await conn.execute(stmt)).rowcount == 1 else None

    async def _upsert(
        self, conn: AsyncConnection, row: dict[str, Any], *, create_only: bool
    ) -> int | None:
        """PostgreSQL/SQLite: one INSERT ... ON CONFLICT DO UPDATE ... RETURNING version."""
        kv = self.t.kv
        ins = (postgresql.insert if self.kind == "postgresql" else sqlite.insert)(kv)
        ins = ins.values(**row, version=1)
        new: dict[str, Any] = {k: ins.excluded[k] for k in ("value", "nparts", "expires_at")}
        if create_only:
            stmt = ins.on_conflict_do_update(
                index_elements=[kv.c.khash], set_={**new, "version": 1}, where=self.expired()
            )
        else:
            version = case((self.expired(), 1), else_=kv.c.version + 1)
            stmt = ins.on_conflict_do_update(
                index_elements=[kv.c.khash], set_={**new, "version": version}
            )
        found = await conn.scalar(stmt.returning(kv.c.version))
        return None if found is None else int(found)

    async def _mysql_upsert(self, conn: AsyncConnection, row: dict[str, Any]) -> int:
        """One INSERT ... ON DUPLICATE KEY UPDATE; LAST_INSERT_ID(expr) hands back the version."""
        kv = self.t.kv
        ins = mysql.insert(kv).values(**row, version=func.last_insert_id(1))
        version = case((self.expired(), 1), else_=kv.c.version + 1)
        # MySQL assigns left to right: version first, while expires_at still holds the old value.
        stmt = ins.on_duplicate_key_update(
            [
                ("version", func.last_insert_id(version)),
                ("value", ins.inserted.value),
                ("nparts", ins.inserted.nparts),
                ("expires_at", ins.inserted.expires_at),
            ]
        )
        return int((await conn.execute(stmt)).lastrowid)

    async def _mysql_create(
        self, conn: AsyncConnection, ref: Ref, row: dict[str, Any]
    ) -> int | None:
        """INSERT; on a duplicate key replace the row only if it expired (same transaction)."""
        kv = self.t.kv
        ins = insert(kv).values(**row, version=1)
        try:
            await conn.execute(ins)
            return 1
        except IntegrityError as e:
            if mysql_code(e) != 1062:
                raise
        gone = await conn.execute(delete(kv).where(kv.c.khash == ref.h, self.expired()))
        if gone.rowcount == 0:
            return None
        await conn.execute(ins)
        return 1

    async def delete_row(
        self, conn: AsyncConnection, h: bytes, conds: Sequence[ColumnElement[bool]]
    ) -> bool:
        """DELETE the row, then its chunks (skipped when RETURNING shows it had none)."""
        stmt = delete(self.t.kv).where(*conds)
        if self._dialect.delete_returning:
            rows = (await conn.execute(stmt.returning(self.t.kv.c.nparts))).all()
            deleted, chunked = bool(rows), any(r[0] for r in rows)
        else:
            deleted = chunked = bool((await conn.execute(stmt)).rowcount)
        if chunked:
            part = self.t.kv_part
            await conn.execute(delete(part).where(part.c.khash == h))
        return deleted

    async def holds(self, conn: AsyncConnection, h: bytes, value: bytes) -> bool:
        """Whether the live row ``h`` holds exactly ``value``; locks the row until commit."""
        kv, part = self.t.kv, self.t.kv_part
        stmt = select(kv.c.value, kv.c.nparts).where(kv.c.khash == h, self.live())
        found = (await conn.execute(stmt.with_for_update())).first()
        if found is None:
            return False
        stored, nparts = bytes(found[0]), int(found[1])
        if nparts:
            rows = await conn.scalars(
                select(part.c.data).where(part.c.khash == h).order_by(part.c.n)
            )
            stored = b"".join(bytes(d) for d in rows)
        return stored == bytes(value)

    async def live_version(self, conn: AsyncConnection, h: bytes) -> int:
        c = self.t.kv.c
        found = await conn.scalar(select(c.version).where(c.khash == h, self.live()))
        return 0 if found is None else int(found)

    async def next_seq(self, conn: AsyncConnection, sid: bytes) -> int:
        """Bump the stream's counter row; its row lock is held until commit."""
        head = self.t.stream_head
        if self.kind == "mysql":
            ins = mysql.insert(head).values(sid=sid, last_seq=func.last_insert_id(1))
            bump = ins.on_duplicate_key_update(last_seq=func.last_insert_id(head.c.last_seq + 1))
            return int((await conn.execute(bump)).lastrowid)
        up = (postgresql.insert if self.kind == "postgresql" else sqlite.insert)(head)
        stmt = up.values(sid=sid, last_seq=1).on_conflict_do_update(
            index_elements=[head.c.sid], set_={"last_seq": head.c.last_seq + 1}
        )
        return int(await conn.scalar(stmt.returning(head.c.last_seq)) or 0)

    async def pg_append(self, conn: AsyncConnection, sid: bytes, value: bytes) -> int:
        """PostgreSQL: counter bump and insert in one statement (a data-modifying CTE)."""
        head, st = self.t.stream_head, self.t.stream
        bump = (
            postgresql.insert(head)
            .values(sid=sid, last_seq=1)
            .on_conflict_do_update(
                index_elements=[head.c.sid], set_={"last_seq": head.c.last_seq + 1}
            )
            .returning(head.c.last_seq)
            .cte("bump")
        )
        row = select(
            literal(sid, LargeBinary), bump.c.last_seq, literal(value, LargeBinary), literal(0)
        )
        stmt = insert(st).from_select(["sid", "seq", "value", "nparts"], row)
        return int(await conn.scalar(stmt.returning(st.c.seq)) or 0)
