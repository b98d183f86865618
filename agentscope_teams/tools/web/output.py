"""The structured results of the web tools and the text the model reads from them."""

from __future__ import annotations

from pydantic import Field

from ..output import ToolOutput
from .search import SearchHit


class WebPage(ToolOutput):
    """A fetched page (``content``: Markdown for HTML, the text itself otherwise), or a redirect
    to another host that was not followed (``redirect_to``).

    ``total_chars`` is the length of the whole converted text, ``content`` its first ``max_chars``;
    ``body_truncated`` says the body was longer than ``max_bytes`` and only ``bytes_read`` bytes
    were downloaded. ``answer`` is the summarizer's answer to ``prompt`` when one is configured.
    """

    url: str
    final_url: str
    status: int
    prompt: str
    content_type: str = ""
    kind: str = ""
    content: str = ""
    total_chars: int = 0
    bytes_read: int = 0
    body_truncated: bool = False
    redirect_to: str | None = None
    answer: str | None = None

    @classmethod
    def redirect(cls, url: str, at: str, to: str, status: int, prompt: str) -> WebPage:
        return cls(url=url, final_url=at, status=status, prompt=prompt, redirect_to=to)

    @property
    def content_truncated(self) -> bool:
        return len(self.content) < self.total_chars

    def render(self) -> str:
        if self.redirect_to is not None:
            return (
                f"{self.final_url} redirects (HTTP {self.status}) to another host: "
                f"{self.redirect_to}\nIt was not followed. To read it, call web_fetch again with "
                f'url="{self.redirect_to}" and the same prompt.'
            )
        lines = [
            f"URL: {self.final_url}" + (f" (from {self.url})" if self.url != self.final_url else "")
        ]
        if self.answer is not None:
            lines += [f"Question: {self.prompt}", "", self.answer]
            return "\n".join(lines)
        what = "converted from HTML to Markdown" if self.kind == "html" else self.kind
        lines += [
            f"Content: {self.content_type or 'no content type'}, {what}",
            f"Question to answer from this page: {self.prompt}",
            "",
            self.content,
        ]
        notes = []
        if self.body_truncated:
            notes.append(
                f"the page is larger than {self.bytes_read:,} bytes; only that much was downloaded"
            )
        if self.content_truncated:
            notes.append(
                f"only the first {len(self.content):,} of {self.total_chars:,} characters are shown"
            )
        if notes:
            lines += [
                "",
                f"[web_fetch: {'; '.join(notes)}. Fetch a more specific URL for the rest.]",
            ]
        return "\n".join(lines)


class SearchResults(ToolOutput):
    """The hits of one search after the domain filter; ``dropped`` counts the filtered-out ones."""

    query: str
    provider: str
    hits: list[SearchHit] = Field(default_factory=list)
    dropped: int = 0

    def render(self) -> str:
        head = f'Web search results for "{self.query}" ({self.provider})'
        if self.dropped:
            head += f"; {self.dropped} result(s) removed by the domain filters"
        if not self.hits:
            return head + ":\nNo results. Try other words or fewer domain restrictions."
        rows = [
            f"{i}. [{h.title or h.url}]({h.url})" + (f"\n   {h.snippet}" if h.snippet else "")
            for i, h in enumerate(self.hits, 1)
        ]
        tail = "\nCite the URLs you use as Markdown links; fetch a page with web_fetch to read it."
        return head + ":\n" + "\n".join(rows) + tail
