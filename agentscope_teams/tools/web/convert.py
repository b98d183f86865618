"""What ``web_fetch`` makes of a response body: which content types it reads, and HTML to Markdown.

Read: HTML (``text/html``, ``application/xhtml+xml``) converted to Markdown (with ``markdownify``,
the ``web`` extra); Markdown, plain text and other ``text/*``; JSON (``application/json``,
``*+json``) and XML (``application/xml``, ``text/xml``, ``*+xml``) as they are. Anything else
(images, PDF, ``application/octet-stream``, archives, audio, video) is refused by name. A response
without a content type is read as text unless its first bytes hold a NUL byte.
"""

from __future__ import annotations

import importlib.util
import re
from typing import Any, Literal
from urllib.parse import urljoin

from ...errors import MissingDependencyError, WebAccessError

Kind = Literal["html", "markdown", "text", "json", "xml"]

READABLE = "HTML, Markdown, plain text, JSON and XML"

_DROP = ("script", "style", "noscript", "template", "iframe", "svg", "canvas", "head")

#: What is nested deeper becomes plain text (the converter recurses once per level).
MAX_NESTING = 100


def content_kind(content_type: str | None, head: bytes, url: str) -> Kind:
    """The kind of a body from its ``Content-Type`` (``head``: its first bytes, for sniffing);
    raises :class:`WebAccessError` (``unsupported_content``) for a type web_fetch does not read."""
    mime = (content_type or "").split(";", 1)[0].strip().lower()
    if not mime:
        if b"\x00" in head[:1024]:
            raise _unsupported("binary data without a content type", url)
        return "html" if b"<html" in head[:1024].lower() else "text"
    if mime in ("text/html", "application/xhtml+xml"):
        return "html"
    if mime in ("text/markdown", "text/x-markdown"):
        return "markdown"
    if mime == "application/json" or mime.endswith("+json"):
        return "json"
    if mime in ("application/xml", "text/xml") or (mime.endswith("+xml") and "image/" not in mime):
        return "xml"
    if mime.startswith("text/"):
        return "text"
    raise _unsupported(f"content type {mime}", url)


def _unsupported(what: str, url: str) -> WebAccessError:
    return WebAccessError(
        f"{url} returned {what}, which web_fetch does not read (it reads {READABLE}); "
        "find an HTML or text version of this document",
        url=url,
        reason="unsupported_content",
    )


def markdown_available() -> bool:
    """True if the HTML converter (the ``web`` extra) is installed (found, not imported)."""
    return all(importlib.util.find_spec(name) is not None for name in ("markdownify", "bs4"))


def html_to_markdown(html: str | bytes, base_url: str = "") -> str:
    """The readable content of an HTML page as Markdown: scripts, styles, frames and the head
    dropped, links and images made absolute against ``base_url``, ATX headings, blank-line runs
    collapsed, elements nested deeper than :data:`MAX_NESTING` reduced to their text. The
    ``<title>`` becomes a first heading when the body has no ``<h1>``."""
    try:
        from bs4 import BeautifulSoup
        from markdownify import MarkdownConverter
    except ImportError as exc:
        raise MissingDependencyError(
            "web_fetch (HTML to Markdown)", "web", ["markdownify", "beautifulsoup4"]
        ) from exc
    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else ""
    for dropped in soup.find_all(_DROP):
        dropped.decompose()
    _flatten(soup, MAX_NESTING)
    for name, attr in (("a", "href"), ("img", "src")):
        for node in soup.find_all(name, attrs={attr: True}) if base_url else ():
            node[attr] = urljoin(base_url, str(node[attr]))
    text = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    text = re.sub(r"[ \t]+\n", "\n", text)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    if title and not soup.find("h1"):
        text = f"# {title}\n\n{text}"
    return text


def _flatten(soup: Any, limit: int) -> None:
    """Replace what is nested deeper than ``limit`` (a generated or hostile page) by its text, so
    converting the page cannot exhaust Python's recursion limit; linear in the page's size."""
    from bs4 import Tag

    stack: list[tuple[Any, int]] = [(soup, 0)]
    while stack:
        node, depth = stack.pop()
        children = [c for c in node.contents if isinstance(c, Tag)]
        if depth >= limit and children:
            text = node.get_text()
            node.clear()
            node.append(text)
            continue
        stack.extend((child, depth + 1) for child in children)
