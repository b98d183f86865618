"""Data classes for the inventory."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal


@dataclass(frozen=True)
class Supplier:
    id: int
    name: str
    email: str
    country: str = "DE"


@dataclass
class Item:
    id: int
    sku: str
    name: str
    category: str
    qty: int
    unit_price: Decimal
    supplier_id: int
    tags: list[str] = field(default_factory=list)
    last_counted: date | None = None

    @property
    def stock_value(self) -> Decimal:
        return self.unit_price * self.qty

    def needs_reorder(self, threshold: int) -> bool:
        return self.qty < threshold

    def with_qty(self, qty: int) -> Item:
        if qty < 0:
            raise ValueError(f"quantity of {self.sku} cannot be negative: {qty}")
        return Item(
            id=self.id,
            sku=self.sku,
            name=self.name,
            category=self.category,
            qty=qty,
            unit_price=self.unit_price,
            supplier_id=self.supplier_id,
            tags=list(self.tags),
            last_counted=self.last_counted,
        )


@dataclass
class StockMovement:
    item_id: int
    delta: int
    reason: str
    day: date = field(default_factory=date.today)

    def is_outgoing(self) -> bool:
        return self.delta < 0


def index_by_id(items: list[Item]) -> dict[int, Item]:
    """Map item id -> item."""
    return {item.id: item for item in items}


def total_value(items: list[Item]) -> Decimal:
    return sum((item.stock_value for item in items), Decimal(0))
