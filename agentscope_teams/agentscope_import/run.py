"""``import_agentscope_sessions``: copy the sessions an AgentScope 2.0 storage holds into a
:class:`SessionStorage`, converting each (see :mod:`.convert`), idempotently, with a dry run.

Each record is converted in isolation: one that cannot be (a field of another shape, a date or
number out of range, JSON nested too deep, a non-finite number) is refused with its id and the
reason, nothing of it is written, and the others go on. A session already imported and unchanged since is left alone (its version stays).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

from ..keys import SessionAddress
from ..sessions.storage import SessionStorage
from ..store.url import redact_url
from .convert import convert_record
from .convert_messages import CannotConvert
from .sources import read_records

Outcome = Literal["created", "updated", "unchanged", "refused"]


@dataclass(frozen=True)
class SessionImport:
    """What happened (or, in a dry run, would happen) to one stored AgentScope session."""

    where: str
    outcome: Outcome
    user_id: str | None = None
    agent_id: str | None = None
    session_id: str | None = None
    reason: str | None = None
    notes: tuple[str, ...] = ()


@dataclass
class ImportReport:
    """Every session read from ``source``, in order; ``dry_run`` when nothing was written."""

    source: str
    dry_run: bool
    sessions: list[SessionImport] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Sessions per outcome (every outcome present, zero when none)."""
        found = Counter(s.outcome for s in self.sessions)
        return {k: found.get(k, 0) for k in ("created", "updated", "unchanged", "refused")}


async def import_agentscope_sessions(
    source_url: str,
    storage: SessionStorage,
    *,
    org_id: str | None = None,
    dry_run: bool = False,
) -> ImportReport:
    """Import every session stored at ``source_url`` (AgentScope's Redis or SQL storage) into
    ``storage`` under ``org_id``. ``ConfigurationError`` if the URL is unusable or unreachable;
    an error of ``storage`` itself (a :class:`~...errors.StoreError`) is raised as it is."""
    report = ImportReport(redact_url(source_url), dry_run)
    async for found in read_records(source_url):
        if found.raw is None:
            report.sessions.append(SessionImport(found.where, "refused", reason=found.problem))
            continue
        report.sessions.append(await _one(storage, found.where, found.raw, org_id, dry_run))
    return report


async def _one(
    storage: SessionStorage, where: str, raw: dict[str, object], org_id: str | None, dry_run: bool
) -> SessionImport:
    ids = [_text(raw.get(k)) for k in ("user_id", "agent_id", "id")]
    try:
        converted = convert_record(raw)
        addr = SessionAddress(org_id, converted.user_id, converted.agent_id, converted.session_id)
        converted.body.model_dump_json()  # what import_at writes: refuse here what cannot be
    except (CannotConvert, ValueError) as exc:  # also a date or number out of range, inf, nan
        return SessionImport(where, "refused", ids[0], ids[1], ids[2], reason=str(exc))
    except (OverflowError, RecursionError) as exc:  # a date or number out of range, a depth
        reason = f"a value is out of range: {type(exc).__name__}: {_short(exc)}"
        return SessionImport(where, "refused", ids[0], ids[1], ids[2], reason=reason)
    except (KeyError, TypeError, AttributeError) as exc:  # a field missing or of another shape
        reason = f"malformed record: {type(exc).__name__}: {_short(exc)}"
        return SessionImport(where, "refused", ids[0], ids[1], ids[2], reason=reason)
    outcome = await storage.import_at(addr, converted.body, dry_run=dry_run)
    return SessionImport(
        where,
        outcome,
        converted.user_id,
        converted.agent_id,
        converted.session_id,
        notes=tuple(converted.notes),
    )


def _short(exc: BaseException, width: int = 300) -> str:
    """The first line of an exception's message, cut to ``width`` characters."""
    text = (str(exc).splitlines() or [""])[0]
    return text if len(text) <= width else text[: width - 1] + "…"


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None
