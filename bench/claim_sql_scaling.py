"""Board claims on PostgreSQL and MariaDB as the board grows, and against a raw claim loop
(issue 26, item 1).

**Scaling.** ``TaskBoard.claim_next`` timed alone on boards of 1k, 10k and 100k pending tasks, and
on one of 1k pending beside 100k finished and 10k held (live leases), alternating board by board
each round on one store (:mod:`.sql_board` loads them in bulk). Target: 100k within 1.5x of 1k.

**Throughput.** 16 claimers in one process, each looping claim-next then complete, on the board
(``TaskBoard.claim_next`` + ``complete``) and, on PostgreSQL, on a raw asyncpg ``FOR UPDATE SKIP
LOCKED`` queue (a jobs table, a partial index on pending, one claim ``UPDATE`` and one complete
``UPDATE`` per job, pool of 16): the floor. Rounds alternate. Target: the board within 2x of the
floor's claims/s. The CPU the process spends per task is shown beside (``time.process_time``),
and on PostgreSQL the wake-up statements (``pg_notify``) the board sent per task: its finishes'
wake-ups are coalesced per team (:class:`~agentscope_teams.store.sql.signals.Wakes`). The board's
checkouts from the store's connection pool per task are counted too (the claim and finish run on
connections the store keeps between calls, :mod:`agentscope_teams.store.sql.spare`: about 0).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Awaitable, Callable

import anyio
from sqlalchemy import event

from agentscope_teams.store.sql import SqlStore
from agentscope_teams.teams.board import TaskBoard
from agentscope_teams.teams.queues.sql_pg import PostgresBoardQueue

from .fixtures import MYSQL_URL, POSTGRES_URL
from .sql_board import bulk_board, explain, private_store
from .stats import RoundFn, Sample, compare, fmt, ms, section, table, us, verdict
from .task_claim import chosen

SCALE_TARGET = 1.5
FLOOR_TARGET = 2.0
CLAIMERS = 16
BACKENDS = [("postgres", POSTGRES_URL), ("mariadb", MYSQL_URL)]
PAYLOAD = "x" * 800  # about a task record's size


def _claims(board: TaskBoard) -> Callable[[int], Awaitable[float]]:
    async def run(ops: int) -> float:
        t0 = time.perf_counter()
        for _ in range(ops):
            assert await board.claim_next("b", 3600) is not None
        return (time.perf_counter() - t0) / ops

    return run


async def _scaling(
    url: str, sizes: list[int], ops: int, rounds: int
) -> tuple[dict[str, Sample], str]:
    need = ops * (rounds + 2)
    async with private_store(url) as store:
        boards = {f"{n:,} pending": await bulk_board(store, ["b"], pending=n) for n in sizes}
        small, big = sizes[0], sizes[-1]
        mixed = f"{small:,} pending + {big:,} finished + {big // 10:,} held"
        boards[mixed] = await bulk_board(
            store, ["b"], pending=max(small, need), held=big // 10, done=big
        )
        plan = await explain(boards[f"{big:,} pending"], analyze=True)
        found = await compare({n: _claims(b) for n, b in boards.items()}, ops=ops, rounds=rounds)
    return found, plan


def _spread(sample: Sample) -> str:
    return f"{us(min(sample.per_op))} / {us(sample.median)} / {us(max(sample.per_op))}"


def _notifies(board: TaskBoard) -> int:
    """The wake-ups the board's store sent so far (PostgreSQL; 0 elsewhere)."""
    queue = board.queue
    if not isinstance(queue, PostgresBoardQueue):
        return 0
    return queue.store.wakes.sent


class _Checkouts:
    """Counts the checkouts from ``store``'s connection pool."""

    def __init__(self, store: SqlStore) -> None:
        self.n = 0
        event.listen(store._engine.sync_engine, "checkout", self._seen)

    def _seen(self, *_: object) -> None:
        self.n += 1


def _board_round(
    board: TaskBoard,
    members: list[str],
    cpu: list[float],
    notify: list[float],
    borrows: tuple[_Checkouts, list[float]],
) -> RoundFn:
    async def run(ops: int) -> float:
        left = [ops]

        async def claimer(member: str) -> None:
            while left[0] > 0:
                left[0] -= 1
                task = await board.claim_next(member, 3600)
                assert task is not None
                await board.complete(member, task.id, "ok")

        counter, borrowed = borrows
        b0, n0 = counter.n, _notifies(board)
        c0, t0 = time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as tg:
            for m in members:
                tg.start_soon(claimer, m)
        cpu.append((time.process_time() - c0) / ops)
        notify.append((_notifies(board) - n0) / ops)
        borrowed.append((counter.n - b0) / ops)
        return (time.perf_counter() - t0) / ops

    return run


async def _floor_round(pool: object, name: str, cpu: list[float]) -> RoundFn:
    claim = (
        f"UPDATE {name} SET status = 'running', owner = $1 WHERE id = (SELECT id FROM {name} "
        "WHERE status = 'pending' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id, payload"
    )
    complete = f"UPDATE {name} SET status = 'done' WHERE id = $1"

    async def run(ops: int) -> float:
        left = [ops]

        async def claimer(member: str) -> None:
            async with pool.acquire() as conn:  # type: ignore[attr-defined]
                while left[0] > 0:
                    left[0] -= 1
                    row = await conn.fetchrow(claim, member)
                    assert row is not None
                    await conn.execute(complete, row["id"])

        c0, t0 = time.process_time(), time.perf_counter()
        async with anyio.create_task_group() as tg:
            for i in range(CLAIMERS):
                tg.start_soon(claimer, f"c{i}")
        cpu.append((time.process_time() - c0) / ops)
        return (time.perf_counter() - t0) / ops

    return run


async def _floor(jobs: int) -> tuple[object, str]:
    import asyncpg

    dsn = POSTGRES_URL.replace("postgresql+asyncpg://", "postgresql://")
    pool = await asyncpg.create_pool(dsn, min_size=CLAIMERS, max_size=CLAIMERS)
    name = f"bench_floor_{uuid.uuid4().hex[:8]}"
    await pool.execute(
        f"CREATE TABLE {name} (id bigserial PRIMARY KEY, status text NOT NULL, owner text, "
        "payload jsonb NOT NULL)"
    )
    await pool.execute(f"CREATE INDEX {name}_ready ON {name} (id) WHERE status = 'pending'")
    await pool.execute(
        f"INSERT INTO {name} (status, payload) SELECT 'pending', jsonb_build_object('p', $1::text) "
        "FROM generate_series(1, $2)",
        PAYLOAD,
        jobs,
    )
    await pool.execute(f"ANALYZE {name}")
    return pool, name


async def _throughput(
    name: str, url: str, tasks: int, rounds: int
) -> tuple[dict[str, Sample], dict[str, list[float]]]:
    jobs = tasks * (rounds + 2)
    members = [f"c{i}" for i in range(CLAIMERS)]
    cpu: dict[str, list[float]] = {"board": [], "floor": [], "board, 4": []}
    notify: dict[str, list[float]] = {"board": [], "board, 4": []}
    borrowed: dict[str, list[float]] = {"board": [], "board, 4": []}
    async with private_store(url, pool=CLAIMERS + 4) as store:
        board = await bulk_board(store, members, pending=jobs * 2)
        counter = _Checkouts(store)
        subjects = {
            label: _board_round(
                board, members[:n], cpu[label], notify[label], (counter, borrowed[label])
            )
            for label, n in (("board", CLAIMERS), ("board, 4", 4))
        }
        pool: object = None
        try:
            if name == "postgres":
                pool, table_name = await _floor(jobs)
                subjects["floor"] = await _floor_round(pool, table_name, cpu["floor"])
            found = await compare(subjects, ops=tasks, rounds=rounds)
        finally:
            if pool is not None:
                await pool.execute(f"DROP TABLE IF EXISTS {table_name}")  # type: ignore[attr-defined]
                await pool.close()  # type: ignore[attr-defined]
    notes = {f"{k} notify": v for k, v in notify.items()}
    notes.update({f"{k} borrows": v for k, v in borrowed.items()})
    return found, {**cpu, **notes}


def _cpu(values: list[float]) -> str:
    return ms(sorted(values)[len(values) // 2]) if values else "-"


def _per_task(values: list[float]) -> str:
    return f"{sorted(values)[len(values) // 2]:.2f}" if values else "-"


async def run(fast: bool = False) -> str:
    sizes = [100, 1_000] if fast else [1_000, 10_000, 100_000]
    ops, rounds = (5, 3) if fast else (20, 7)
    tasks, trounds = (32, 3) if fast else (320, 7)
    scale_rows: list[list[str]] = []
    rate_rows: list[list[str]] = []
    plans: list[str] = []
    verdicts: list[str] = []
    loads = [os.getloadavg()[0]]
    for name, url in chosen(BACKENDS):
        try:
            found, plan = await _scaling(url, sizes, ops, rounds)
            rates, cpu_of = await _throughput(name, url, tasks, trounds)
            loads.append(os.getloadavg()[0])
        except Exception as exc:  # a service that is down: say so
            verdicts.append(f"{name}: not measured ({type(exc).__name__}: {exc})")
            continue
        base = found[f"{sizes[0]:,} pending"]
        for label, sample in found.items():
            ratio = sample.median / base.median
            scale_rows.append([name, label, fmt(sample, us), _spread(sample), f"{ratio:.2f}"])
        top = found[f"{sizes[-1]:,} pending"].median / base.median
        verdicts.append(
            f"{name}: claim at {sizes[-1]:,} pending ≤ {SCALE_TARGET}x at {sizes[0]:,}: "
            f"{top:.2f}x — " + verdict(top <= SCALE_TARGET, "see the plan")
        )
        plans.append(f"{name}, {sizes[-1]:,} pending:\n\n```\n{plan}\n```")
        for label in ("floor", "board", "board, 4"):
            got = rates.get(label)
            if got is not None:
                claimers = 4 if label.endswith("4") else CLAIMERS
                per_s = f"{1 / got.median:,.0f}"
                cpu = _cpu(cpu_of[label])
                notifies = (
                    _per_task(cpu_of.get(f"{label} notify", [])) if name == "postgres" else "-"
                )
                borrows = _per_task(cpu_of.get(f"{label} borrows", []))
                row = [name, label, str(claimers), per_s, fmt(got, us), cpu, notifies, borrows]
                rate_rows.append(row)
        floor, ours = rates.get("floor"), rates["board"]
        if floor is not None:
            gap = ours.median / floor.median
            verdicts.append(
                f"{name}: board claims/s at {CLAIMERS} claimers within {FLOOR_TARGET}x of the "
                f"raw SKIP LOCKED floor: {gap:.2f}x — " + verdict(gap <= FLOOR_TARGET, "profile")
            )
    intro = (
        f"Claim alone: {rounds} rounds of {ops} claims per board, boards alternating; µs per "
        f"claim, median ± spread and min / median / max of the rounds. Claim + complete: "
        f"{trounds} rounds of {tasks} tasks, subjects alternating; wall µs per task, "
        "median CPU ms per task of this process, NOTIFY statements and pool checkouts per task. "
        "Load average "
        "(1 min) at the start and after each backend: "
        + " / ".join(f"{x:.1f}" for x in loads)
        + "."
    )
    body = (
        table(["backend", "board", "claim µs", "min / median / max", "vs smallest"], scale_rows)
        + "\n\n"
        + table(
            [
                "backend",
                "subject",
                "claimers",
                "tasks/s",
                "µs per task",
                "CPU ms per task",
                "NOTIFY per task",
                "pool checkouts per task",
            ],
            rate_rows,
        )
        + "\n\nPlans of the claim at the largest board (PostgreSQL: EXPLAIN ANALYZE of the whole "
        "statement, rolled back; MariaDB: ANALYZE of its locking read):\n\n" + "\n\n".join(plans)
    )
    return section("SQL claims: flat with the board, against a raw floor", intro, body, verdicts)
