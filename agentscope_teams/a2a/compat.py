"""Tolerating what other A2A servers send that the a2a-sdk's client refuses.

fasta2a (pydantic-ai's A2A server) writes timestamps as naive ISO times (``datetime.now()
.isoformat()``, no zone); the SDK parses JSON into protobuf, whose timestamps need a zone, and
refuses the whole answer. :class:`LenientTimestamps` wraps the HTTP transport and reads a naive
``"timestamp"`` of a JSON answer as UTC. Anything else passes unchanged.
"""

from __future__ import annotations

import re
from typing import Any

_NAIVE = re.compile(rb'("timestamp"\s*:\s*"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)"')


def zoned(body: bytes) -> bytes:
    """``body`` with every naive ``"timestamp"`` value marked UTC (``Z``)."""
    return _NAIVE.sub(rb'\1Z"', body)


def lenient_transport(inner: Any) -> Any:
    """An httpx async transport over ``inner`` that applies :func:`zoned` to JSON answers."""
    import httpx

    class LenientTimestamps(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            response: httpx.Response = await inner.handle_async_request(request)
            kind = response.headers.get("content-type", "")
            if "json" not in kind or response.headers.get("content-encoding"):
                return response
            body = zoned(await response.aread())
            headers = [(k, v) for k, v in response.headers.items() if k != "content-length"]
            return httpx.Response(
                response.status_code,
                headers=headers,
                content=body,
                request=request,
                extensions=response.extensions,
            )

        async def aclose(self) -> None:
            await inner.aclose()

    return LenientTimestamps()
