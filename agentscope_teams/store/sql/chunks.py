"""Values over ``chunk_bytes`` as part rows (``kv_part`` / ``stream_part``).

MySQL cannot move a statement or row larger than ``max_allowed_packet`` (16 MiB by default on
MariaDB), so a large value is stored as numbered chunks, one ``INSERT`` each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Table, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

DEFAULT_CHUNK_BYTES = 1024 * 1024


def split(value: bytes, size: int) -> tuple[bytes, list[bytes]]:
    """``(inline, [])`` for a value of at most ``size`` bytes, else ``(b"", chunks)``."""
    data = bytes(value)
    if len(data) <= size:
        return data, []
    return b"", [data[i : i + size] for i in range(0, len(data), size)]


async def insert_chunks(
    conn: AsyncConnection, table: Table, ids: dict[str, Any], chunks: Sequence[bytes]
) -> None:
    # One statement per chunk keeps every packet far below MySQL's max_allowed_packet.
    for n, data in enumerate(chunks):
        await conn.execute(insert(table).values(**ids, n=n, data=data))


async def stream_chunks(
    conn: AsyncConnection, part: Table, sid: bytes, seqs: list[int]
) -> dict[int, list[bytes]]:
    """The chunks of the stream entries ``seqs``, in order, by seq."""
    stmt = (
        select(part.c.seq, part.c.data)
        .where(part.c.sid == sid, part.c.seq.in_(seqs))
        .order_by(part.c.seq, part.c.n)
    )
    out: dict[int, list[bytes]] = {}
    for seq, data in (await conn.execute(stmt)).all():
        out.setdefault(int(seq), []).append(bytes(data))
    return out


def stream_entries(
    rows: Sequence[Sequence[Any]], chunks: dict[int, list[bytes]]
) -> list[tuple[int, bytes]]:
    """``(seq, value)`` for rows of ``(seq, value, nparts)``, joining chunked values."""
    out: list[tuple[int, bytes]] = []
    for seq, value, nparts in rows:
        if nparts:
            parts = chunks.get(seq, [])
            if len(parts) != nparts:
                break  # the stream was deleted between the two statements
            value = b"".join(parts)
        out.append((int(seq), bytes(value)))
    return out
