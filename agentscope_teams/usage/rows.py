"""A usage document as the SQL stores keep it: a head and one row per map entry.

A budget's or limiter's scalars stay one JSON document, its *head* (budget: ``ut``, ``un``,
``rt``, ``rn``; limiter: ``tat``, ``ttat``, ``hold``, ``last`` and the counts ``nten`` and
``nlease`` the rules need the length of its maps as); its reservations, tenants and leases are
rows ``(kind, name, a, b, exp)`` of their own (:mod:`.sql_docs`), so a call reads and writes the
rows it concerns, not every one. ``exp`` is the column the index finds what has ended by:

* ``r`` a reservation: ``name`` its id, ``a``/``b`` tokens/nano-dollars, ``exp`` its expiry;
* ``l`` a lease: ``name`` its id, ``exp`` its expiry;
* ``t`` a tenant: ``name`` the tenant, ``a`` its theoretical arrival time, ``exp`` when last seen.

:func:`split` and :func:`join` turn the documents of :mod:`.rules` into that form and back.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, NamedTuple

from .rules import Doc

#: The maps of a document, by the kind of their rows.
MAPS = {"res": "r", "lease": "l", "ten": "t"}
#: The counts a limiter's head keeps (the length of its tenants' and leases' maps).
COUNTS = {"ten": "nten", "lease": "nlease"}
_BUDGET_FIELDS = ("ut", "un", "rt", "rn")
#: Names longer than this are kept as ``sha256:<hex>`` (the column's width on MariaDB).
MAX_NAME = 255
#: Names MariaDB/MySQL tell apart as Python does (its text columns compare case- and
#: accent-insensitively and ignore trailing spaces): :func:`mysql_entry_name` keeps only these.
_PLAIN = re.compile(rf"[0-9a-z._:-]{{0,{MAX_NAME}}}")


class Entry(NamedTuple):
    """One row of a document's maps (see the module)."""

    kind: str
    name: str
    a: float
    b: float
    exp: float


def entry_name(name: str) -> str:
    """The row name of a tenant, reservation or lease called ``name`` (a digest when too long)."""
    if len(name) <= MAX_NAME:
        return name
    return _digest(name)


def mysql_entry_name(name: str) -> str:
    """:func:`entry_name` on MariaDB/MySQL: a digest unless ``name`` is lower-case ASCII letters,
    digits and ``._:-`` (so names the column's collation takes for one stay apart)."""
    return name if _PLAIN.fullmatch(name) else _digest(name)


def _digest(name: str) -> str:
    return "sha256:" + hashlib.sha256(name.encode()).hexdigest()


def split(doc: Doc) -> tuple[Doc, list[Entry]]:
    """The head and the rows of ``doc`` (a document of :mod:`.rules`, maps embedded)."""
    head = {k: v for k, v in doc.items() if k not in MAPS}
    rows: list[Entry] = []
    for rid, (t, n, exp) in doc.get("res", {}).items():
        rows.append(Entry("r", entry_name(rid), t, n, exp))
    for name, (tat, seen) in doc.get("ten", {}).items():
        rows.append(Entry("t", entry_name(name), tat, 0, seen))
    for lid, exp in doc.get("lease", {}).items():
        rows.append(Entry("l", entry_name(lid), 0, 0, exp))
    if "ten" in doc or "lease" in doc:  # counted from the maps unless the document has counts
        for field, count in COUNTS.items():
            head.setdefault(count, len(doc.get(field, {})))
    return head, rows


def join(head: Doc, rows: list[Any]) -> Doc | None:
    """The document of :mod:`.rules` a head and its rows ``(kind, name, a, b, exp)`` make (maps
    assembled; a limiter keeps its counts); None for an empty head without rows."""
    kinds = {r[0] for r in rows}
    if not head and not kinds:
        return None
    doc = dict(head)
    if "r" in kinds or any(f in head for f in _BUDGET_FIELDS):
        doc["res"] = {r[1]: [int(r[2]), int(r[3]), int(r[4])] for r in rows if r[0] == "r"}
    if kinds & {"t", "l"} or not any(f in head for f in _BUDGET_FIELDS):
        doc["ten"] = {r[1]: [float(r[2]), float(r[4])] for r in rows if r[0] == "t"}
        doc["lease"] = {r[1]: float(r[4]) for r in rows if r[0] == "l"}
    return doc
