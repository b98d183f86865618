"""``web_fetch`` decodes a compressed body (gzip, deflate) a bounded piece at a time: a small body
that inflates to 50 MB (a zip bomb) is cut at ``max_bytes`` as it inflates, so memory stays near
``max_bytes``, and an encoding it did not ask for is refused by name."""

from __future__ import annotations

import functools
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest

from agentscope_teams import WebAccessError
from agentscope_teams.tools.web import WebConfig, fetch_page

from .web_server import LoopbackSite, running

INFLATED = 50_000_000
MAX_BYTES = 100_000


@functools.cache
def compressed(encoding: str) -> bytes:
    """50 MB of ``a`` compressed as ``encoding`` (about 50 KB on the wire)."""
    wbits = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "raw": -zlib.MAX_WBITS}
    packer = zlib.compressobj(9, zlib.DEFLATED, wbits[encoding])
    block = b"a" * 1_000_000
    return b"".join(packer.compress(block) for _ in range(INFLATED // len(block))) + packer.flush()


@pytest.fixture
def site() -> Iterator[LoopbackSite]:
    with running() as s:
        for encoding in ("gzip", "deflate", "raw"):
            body = compressed(encoding)
            header = "deflate" if encoding == "raw" else encoding
            s.routes[f"/bomb.{encoding}"] = lambda h, q, b=body, e=header: h._send(
                200, b, "text/plain", Content_Encoding=e
            )
        yield s


def config(**kw: object) -> WebConfig:
    return WebConfig(allow_private=["127.0.0.1"], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("encoding", ["gzip", "deflate", "raw"])
async def test_a_compression_bomb_is_cut_at_max_bytes_as_it_inflates(
    site: LoopbackSite, encoding: str
) -> None:
    tracemalloc.start()
    try:
        page = await fetch_page(
            site.url(f"/bomb.{encoding}"), "x", config(max_bytes=MAX_BYTES, max_chars=1_000)
        )
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert page.body_truncated and page.bytes_read == MAX_BYTES
    assert page.content == "a" * 1_000 and page.total_chars == MAX_BYTES
    assert "only that much was downloaded" in page.render()
    # inflating a whole network read at once made tens of MB; bounded, it stays near max_bytes
    assert peak < 40 * MAX_BYTES, f"peak {peak:,} bytes"


async def test_a_small_compressed_page_reads_whole(site: LoopbackSite) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    body = packer.compress(b'{"answer": 42}') + packer.flush()
    site.routes["/small.json"] = lambda h, q: h._send(
        200, body, "application/json", Content_Encoding="gzip"
    )
    page = await fetch_page(site.url("/small.json"), "x", config())
    assert (page.content, page.body_truncated, page.bytes_read) == ('{"answer": 42}', False, 14)


async def test_an_encoding_it_did_not_ask_for_is_refused_by_name(site: LoopbackSite) -> None:
    site.routes["/page.br"] = lambda h, q: h._send(
        200, b"\x8b\x02\x80hello\x03", "text/plain", Content_Encoding="br"
    )
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(site.url("/page.br"), "x", config())
    assert caught.value.reason == "unsupported_content"
    assert "Content-Encoding 'br'" in str(caught.value) and "gzip" in str(caught.value)
