"""An SDK tracer provider exporting to memory, and a span tree to assert parentage on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def memory_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A provider of its own (never the global one: other tests stay untraced)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


class Spans:
    """The finished spans of one exporter, looked up by name and parent."""

    def __init__(self, spans: Sequence[ReadableSpan]) -> None:
        self.all = list(spans)
        self.by_id = {s.context.span_id: s for s in self.all if s.context is not None}

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {self.names()}"
        return found[0]

    def names(self) -> list[str]:
        return sorted(s.name for s in self.all)

    def parent(self, span: ReadableSpan) -> ReadableSpan | None:
        return self.by_id.get(span.parent.span_id) if span.parent is not None else None

    def ancestors(self, span: ReadableSpan) -> list[str]:
        """Names from ``span``'s parent up to the root."""
        out: list[str] = []
        found = self.parent(span)
        while found is not None:
            out.append(found.name)
            found = self.parent(found)
        return out

    def trace_ids(self) -> set[int]:
        return {s.context.trace_id for s in self.all if s.context is not None}


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def events(span: ReadableSpan) -> dict[str, dict[str, Any]]:
    return {e.name: dict(e.attributes or {}) for e in span.events}
