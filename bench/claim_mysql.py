"""MariaDB claim + complete: the board's asyncmy path against its SQLAlchemy path and a raw floor
(issue 26, item 1, MariaDB part).

Claimers in one process, each looping claim-next then complete, alternating subjects round by
round on one board (one store, one team):

* ``board`` (16 and 4 claimers): ``TaskBoard.claim_next`` + ``complete`` on the native queue the
  factory picks (:class:`~agentscope_teams.teams.queues.sql_mysql.MysqlBoardQueue`: the
  statements on the asyncmy connection; the claim two round trips, the completion of the task
  it claimed one);
* ``sqlalchemy board`` (16 and 4): the same board on
  :class:`~agentscope_teams.teams.queues.sql.SqlBoardQueue` (the statements through SQLAlchemy's
  ``AsyncConnection``: three round trips per claim, four per completion), the baseline;
* ``floor`` (16 and 4): a raw asyncmy ``FOR UPDATE SKIP LOCKED`` queue on a jobs table (an index
  on (status, id)): the claim is the locking read then ``UPDATE; COMMIT`` in one packet, the
  completion ``UPDATE; COMMIT``, on 16 pooled connections.

Wall µs per task (median of the rounds), the CPU this process spends per task
(``time.process_time``) and, when the server runs on this machine, the CPU the MariaDB server
process spends per task (``/proc``; it includes whatever else the server serves meanwhile), with
the load average before and after. Run it alone:
``python -m bench.claim_mysql [--fast]``.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable, Coroutine
from typing import Any

import anyio

from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues.sql import SqlBoardQueue

from .fixtures import MYSQL_URL
from .sql_board import bulk_board, private_store
from .stats import RoundFn, Sample, compare, fmt, ms, table, us

CLAIMERS = 16
PAYLOAD = "x" * 800  # about a task record's size
Claimer = Callable[[str, list[int]], Coroutine[Any, Any, None]]


def _server_pid() -> int | None:
    """The MariaDB/MySQL server's process on this machine, if any."""
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() in ("mariadbd", "mysqld"):
                    return int(entry)
        except (OSError, ValueError):
            continue
    return None


def _server_cpu(pid: int | None) -> float:
    """Seconds of CPU the process ``pid`` has used (0 without one)."""
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _round(claimer: Claimer, members: list[str], cpu: list[tuple[float, float]]) -> RoundFn:
    """A round: ``members`` claim and complete ``ops`` tasks between them."""
    server = _server_pid()

    async def run(ops: int) -> float:
        left = [ops]
        c0, s0, t0 = time.process_time(), _server_cpu(server), time.perf_counter()
        async with anyio.create_task_group() as tg:
            for m in members:
                tg.start_soon(claimer, m, left)
        wall = (time.perf_counter() - t0) / ops
        cpu.append(((time.process_time() - c0) / ops, (_server_cpu(server) - s0) / ops))
        return wall

    return run


def _board_claimer(board: TaskBoard) -> Claimer:
    async def claimer(member: str, left: list[int]) -> None:
        while left[0] > 0:
            left[0] -= 1
            task = await board.claim_next(member, 3600)
            assert task is not None
            await board.complete(member, task.id, "ok")

    return claimer


def _floor_claimer(pool: Any, name: str) -> Claimer:
    pick = f"SELECT id, payload FROM {name} WHERE status = 'pending' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED"
    claim = f"UPDATE {name} SET status = 'running', owner = %s WHERE id = %s;COMMIT"
    complete = f"UPDATE {name} SET status = 'done' WHERE id = %s;COMMIT"

    async def claimer(member: str, left: list[int]) -> None:
        async with pool.acquire() as conn:
            while left[0] > 0:
                left[0] -= 1
                await conn.query(pick)
                (job,) = conn._result.rows
                await conn.query(claim % (conn.literal(member), job[0]))
                await conn.next_result()
                await conn.query(complete % job[0])
                await conn.next_result()

    return claimer


async def _floor(jobs: int) -> tuple[Any, str]:
    import asyncmy
    from sqlalchemy.engine import make_url

    url = make_url(MYSQL_URL)
    pool: Any = await asyncmy.create_pool(
        host=url.host,
        port=url.port or 3306,
        user=url.username,
        password=url.password or "",
        db=url.database,
        minsize=CLAIMERS,
        maxsize=CLAIMERS,
        autocommit=False,
    )
    name = f"bench_floor_{uuid.uuid4().hex[:8]}"
    async with pool.acquire() as conn:
        await conn.query(
            f"CREATE TABLE {name} (id BIGINT AUTO_INCREMENT PRIMARY KEY, status VARCHAR(16) NOT "
            "NULL, owner VARCHAR(64), payload JSON NOT NULL, INDEX (status, id)) ENGINE=InnoDB"
        )
        row = conn.literal('{"p": "' + PAYLOAD + '"}')
        for start in range(0, jobs, 1000):
            values = ",".join(f"('pending', {row})" for _ in range(min(1000, jobs - start)))
            await conn.query(f"INSERT INTO {name} (status, payload) VALUES {values}")
        await conn.query("COMMIT")
        await conn.query(f"ANALYZE TABLE {name}")
    return pool, name


async def _drop_floor(pool: Any, name: str) -> None:
    async with pool.acquire() as conn:
        await conn.query(f"DROP TABLE IF EXISTS {name}")
    pool.close()
    await pool.wait_closed()


async def measure(
    tasks: int, rounds: int
) -> tuple[dict[str, Sample], dict[str, list[tuple[float, float]]]]:
    """The samples and CPU per task of every subject (see the module docs)."""
    jobs = tasks * (rounds + 2)
    members = [f"c{i}" for i in range(CLAIMERS)]
    subjects: dict[str, RoundFn] = {}
    cpu: dict[str, list[tuple[float, float]]] = {}
    async with private_store(MYSQL_URL, pool=CLAIMERS + 4) as store:
        board = await bulk_board(store, members, pending=jobs * 4 + 100)
        old = TaskBoard(store, board.keys, native=True)
        old.queue = SqlBoardQueue(store, board.keys)
        pool, name = await _floor(jobs * 2 + 100)
        try:
            for label, claimer in [
                ("floor", _floor_claimer(pool, name)),
                ("board", _board_claimer(board)),
                ("sqlalchemy board", _board_claimer(old)),
            ]:
                for n in (CLAIMERS, 4):
                    cpu[f"{label}, {n}"] = []
                    subjects[f"{label}, {n}"] = _round(claimer, members[:n], cpu[f"{label}, {n}"])
            found = await compare(subjects, ops=tasks, rounds=rounds)
        finally:
            await _drop_floor(pool, name)
    return found, cpu


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def report(
    found: dict[str, Sample], cpu: dict[str, list[tuple[float, float]]], loads: list[float]
) -> str:
    rows = []
    for label, sample in found.items():
        client = _median([c for c, _ in cpu[label]])
        server = _median([s for _, s in cpu[label]])
        rate = f"{1 / sample.median:,.0f}"
        rows.append([label, rate, fmt(sample, us), ms(client), ms(server) if server else "-"])
    ratios = []
    for n in (CLAIMERS, 4):
        board, old, floor = (
            found[f"{s}, {n}"].median for s in ("board", "sqlalchemy board", "floor")
        )
        ratios.append(
            f"{n} claimers: board / floor {board / floor:.2f}x, sqlalchemy board / floor "
            f"{old / floor:.2f}x, board vs sqlalchemy board {old / board:.2f}x the tasks/s"
        )
    for s in ("board", "sqlalchemy board", "floor"):
        scale = found[f"{s}, 4"].median / found[f"{s}, {CLAIMERS}"].median
        ratios.append(f"{s}: {CLAIMERS} / 4 claimers {scale:.2f}x the tasks/s")
    head = ["subject, claimers", "tasks/s", "µs per task", "CPU ms per task", "server CPU ms"]
    load = " / ".join(f"{x:.1f}" for x in loads)
    return table(head, rows) + "\n\n" + "\n".join(f"- {r}" for r in ratios) + f"\n- load {load}"


async def run(fast: bool) -> str:
    """The section of ``python -m bench``: the board, the SQLAlchemy path and the floor."""
    tasks, rounds = (32, 3) if fast else (320, 7)
    loads = [os.getloadavg()[0]]
    found, cpu = await measure(tasks, rounds)
    loads.append(os.getloadavg()[0])
    return (
        "### MariaDB claim + complete against a raw floor (`bench/claim_mysql.py`)\n\n"
        f"{rounds} rounds of {tasks} tasks per subject, alternating\n\n" + report(found, cpu, loads)
    )


async def main(fast: bool) -> None:
    print(await run(fast))


if __name__ == "__main__":
    anyio.run(main, "--fast" in sys.argv)
