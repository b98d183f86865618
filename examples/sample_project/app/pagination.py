"""Page/offset helpers for list endpoints."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")

DEFAULT_PAGE_SIZE = 25
MAX_PAGE_SIZE = 200


@dataclass(frozen=True)
class Page(Generic[T]):
    items: Sequence[T]
    number: int
    size: int
    total: int

    @property
    def pages(self) -> int:
        return max(1, math.ceil(self.total / self.size))

    @property
    def has_next(self) -> bool:
        return self.number < self.pages

    @property
    def has_previous(self) -> bool:
        return self.number > 1


def clamp_size(size: int | None) -> int:
    if size is None or size <= 0:
        return DEFAULT_PAGE_SIZE
    return min(size, MAX_PAGE_SIZE)


def paginate(rows: Sequence[T], number: int = 1, size: int | None = None) -> Page[T]:
    """Slice ``rows`` into the page ``number`` (1-based)."""
    size = clamp_size(size)
    number = max(1, number)
    start = (number - 1) * size
    return Page(items=rows[start : start + size], number=number, size=size, total=len(rows))


def page_links(base_url: str, page: Page[T]) -> dict[str, str]:
    links = {"self": f"{base_url}?page={page.number}&size={page.size}"}
    if page.has_next:
        links["next"] = f"{base_url}?page={page.number + 1}&size={page.size}"
    if page.has_previous:
        links["prev"] = f"{base_url}?page={page.number - 1}&size={page.size}"
    return links
