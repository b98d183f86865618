"""Importing the sessions AgentScope 2.0 stored (its Redis and SQL storages) into any store here."""

from __future__ import annotations

from .convert import convert_record
from .convert_messages import CannotConvert
from .run import ImportReport, SessionImport, import_agentscope_sessions

__all__ = [
    "CannotConvert",
    "ImportReport",
    "SessionImport",
    "convert_record",
    "import_agentscope_sessions",
]
