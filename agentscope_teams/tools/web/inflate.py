"""A response body read to at most ``limit`` decoded bytes, decompressed as it is read.

``web_fetch`` asks for ``gzip`` or ``deflate`` (:data:`ACCEPT_ENCODING`) and decodes them itself
from the raw stream, never producing more than the bytes still wanted: a small body that inflates
to gigabytes (a compression bomb) costs about ``limit`` bytes of memory, not a network read's
worth of inflated output. Another ``Content-Encoding`` (``br``, ``zstd``, two stacked codings) is
refused by name: it was not asked for, and decoding it would not be bounded.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING

from ...errors import WebAccessError

if TYPE_CHECKING:
    import httpx

__all__ = ["ACCEPT_ENCODING", "read_body"]

ACCEPT_ENCODING = "gzip, deflate"
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


class _Inflater:
    """One coding's decompressor; ``deflate`` falls back to a raw stream (no zlib header), which
    some servers send under that name."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._zlib = zlib.decompressobj(_WBITS[coding])
        self._started = False

    def inflate(self, data: bytes, room: int) -> bytes:
        """At most ``room`` bytes inflated from ``data``; input left over when ``room`` is reached
        is dropped (the reader stops there)."""
        try:
            out = self._zlib.decompress(data, room)
        except zlib.error:
            if self._started or self.coding != "deflate":
                raise
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._zlib.decompress(data, room)
        self._started = self._started or bool(data)
        return out


def _inflater(response: httpx.Response, url: str) -> _Inflater | None:
    codings = [
        c.strip().lower()
        for c in response.headers.get("content-encoding", "").split(",")
        if c.strip().lower() not in ("", "identity")
    ]
    if not codings:
        return None
    if len(codings) == 1 and codings[0] in _WBITS:
        return _Inflater(codings[0])
    shown = ", ".join(codings)
    raise WebAccessError(
        f"{url} sent its body with Content-Encoding {shown!r}, which web_fetch does not decode "
        f"(it asks for {ACCEPT_ENCODING} only); try another URL for the page",
        url=url,
        reason="unsupported_content",
    )


async def read_body(response: httpx.Response, limit: int, url: str) -> tuple[bytes, bool]:
    """(at most ``limit`` bytes of the decoded body, whether more was there)."""
    if response.is_stream_consumed:  # a transport that answered from memory (httpx decoded it)
        return response.content[:limit], len(response.content) > limit
    inflater = _inflater(response, url)
    body = bytearray()
    try:
        async for raw in response.aiter_raw():
            room = limit + 1 - len(body)
            body += raw[:room] if inflater is None else inflater.inflate(raw, room)
            if len(body) > limit:
                return bytes(body[:limit]), True
    except zlib.error as exc:  # only an inflater raises it
        coding = inflater.coding if inflater else "compressed"
        raise WebAccessError(
            f"{url} sent a {coding} body that does not decompress ({exc}); the server or a "
            "proxy broke it",
            url=url,
            reason="connection",
        ) from None
    return bytes(body), False
