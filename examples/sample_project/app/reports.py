"""Stock and sales reports."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import date
from decimal import Decimal

from .models import Item, StockMovement, Supplier


def low_stock_report(items: list[Item], threshold: int) -> str:
    report = "SKU;Name;Qty\n"
    for item in items:
        if item.qty < threshold:
            report += f"{item.sku};{item.name};{item.qty}\n"
    return report


def render_csv(rows: list[list[str]]) -> str:
    lines = []
    for row in rows:
        lines.append(";".join(row))
    return "\n".join(lines) + "\n"


def suppliers_in_use(items: list[Item]) -> list[int]:
    supplier_ids = []
    for item in items:
        if item.supplier_id not in supplier_ids:
            supplier_ids.append(item.supplier_id)
    return supplier_ids


def items_in_categories(items: list[Item], categories: list[str]) -> list[Item]:
    wanted = set(categories)
    return [item for item in items if item.category in wanted]


def untagged_items(items: list[Item], tagged_skus: list[str]) -> list[Item]:
    return [item for item in items if item.sku not in tagged_skus]


def duplicate_skus(items: list[Item]) -> list[tuple[Item, Item]]:
    pairs = []
    for first in items:
        for second in items:
            if first.id < second.id and first.sku == second.sku:
                pairs.append((first, second))
    return pairs


def movements_by_item(movements: list[StockMovement]) -> dict[int, list[StockMovement]]:
    grouped: dict[int, list[StockMovement]] = defaultdict(list)
    for movement in movements:
        grouped[movement.item_id].append(movement)
    return grouped


def reconcile_counts(items, counted, movements, tolerance):
    problems = []
    for item in items:
        if item.id in counted:
            expected = item.qty
            for movement in movements.get(item.id, []):
                if movement.day <= item.last_counted:
                    if movement.is_outgoing():
                        if abs(movement.delta) > tolerance:
                            problems.append((item.sku, "large outgoing movement", movement.delta))
                    expected += movement.delta
            if expected != counted[item.id]:
                problems.append((item.sku, "count mismatch", counted[item.id] - expected))
    return problems


def monthly_summary(
    items: list[Item],
    suppliers: list[Supplier],
    movements: list[StockMovement],
    year: int,
    month: int,
    currency: str,
    reorder_threshold: int,
    include_inactive: bool,
) -> dict:
    start = date(year, month, 1)
    end = date(year + 1, 1, 1) if month == 12 else date(year, month + 1, 1)
    in_month = [m for m in movements if start <= m.day < end]
    by_id = {item.id: item for item in items}
    supplier_names = {s.id: s.name for s in suppliers}
    summary: dict = {"period": f"{year}-{month:02d}", "currency": currency}
    incoming = 0
    outgoing = 0
    adjustments = 0
    value_in = Decimal(0)
    value_out = Decimal(0)
    per_category: Counter = Counter()
    per_supplier: Counter = Counter()
    busiest: Counter = Counter()
    for movement in in_month:
        item = by_id.get(movement.item_id)
        if item is None:
            adjustments += 1
            continue
        busiest[item.sku] += 1
        per_category[item.category] += abs(movement.delta)
        per_supplier[supplier_names.get(item.supplier_id, "unknown")] += abs(movement.delta)
        if movement.delta > 0:
            incoming += movement.delta
            value_in += item.unit_price * movement.delta
        elif movement.delta < 0:
            outgoing += -movement.delta
            value_out += item.unit_price * -movement.delta
        else:
            adjustments += 1
    summary["incoming_units"] = incoming
    summary["outgoing_units"] = outgoing
    summary["adjustments"] = adjustments
    summary["value_in"] = str(value_in)
    summary["value_out"] = str(value_out)
    summary["net_units"] = incoming - outgoing
    summary["net_value"] = str(value_in - value_out)
    total_value = Decimal(0)
    total_units = 0
    reorder = []
    empty = []
    for item in items:
        if not include_inactive and item.qty == 0 and item.id not in busiest:
            continue
        total_value += item.stock_value
        total_units += item.qty
        if item.qty == 0:
            empty.append(item.sku)
        elif item.qty < reorder_threshold:
            reorder.append(item.sku)
    summary["stock_value"] = str(total_value)
    summary["stock_units"] = total_units
    summary["reorder"] = sorted(reorder)
    summary["out_of_stock"] = sorted(empty)
    summary["reorder_count"] = len(reorder)
    summary["out_of_stock_count"] = len(empty)
    top_categories = per_category.most_common(5)
    summary["top_categories"] = [name for name, _ in top_categories]
    top_suppliers = per_supplier.most_common(5)
    summary["top_suppliers"] = [name for name, _ in top_suppliers]
    busiest_items = busiest.most_common(10)
    summary["busiest_items"] = [sku for sku, _ in busiest_items]
    turnover = Decimal(0)
    if total_value:
        turnover = (value_out / total_value).quantize(Decimal("0.01"))
    summary["turnover"] = str(turnover)
    days = (end - start).days
    summary["days"] = days
    summary["avg_daily_out"] = round(outgoing / days, 2)
    summary["avg_daily_in"] = round(incoming / days, 2)
    summary["movement_count"] = len(in_month)
    summary["item_count"] = len(items)
    summary["supplier_count"] = len(suppliers)
    return summary
