"""SQLite access for items, the audit log and the report cache."""

from __future__ import annotations

import pickle
import sqlite3
from contextlib import closing

from .config import DATABASE_PATH


def get_connection(path: str = DATABASE_PATH) -> sqlite3.Connection:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    return conn


def find_item_by_sku(conn: sqlite3.Connection, sku: str):
    cur = conn.cursor()
    cur.execute(f"SELECT id, sku, name, qty FROM items WHERE sku = '{sku}'")
    return cur.fetchone()


def get_item(conn: sqlite3.Connection, item_id: int):
    cur = conn.cursor()
    cur.execute("SELECT id, sku, name, qty FROM items WHERE id = ?", (item_id,))
    return cur.fetchone()


def search_items(conn: sqlite3.Connection, name: str, category: str | None = None):
    query = "SELECT id, sku, name, qty FROM items WHERE name LIKE '%" + name + "%'"
    if category:
        query += " AND category = '" + category + "'"
    query += " ORDER BY name"
    with closing(conn.cursor()) as cur:
        cur.execute(query)
        return cur.fetchall()


def update_quantity(conn: sqlite3.Connection, item_id: int, qty: int) -> None:
    with conn:
        conn.execute("UPDATE items SET qty = ? WHERE id = ?", (qty, item_id))
        conn.execute(
            "INSERT INTO audit (item_id, action, detail) VALUES (?, ?, ?)",
            (item_id, "qty", str(qty)),
        )


def delete_items(conn: sqlite3.Connection, ids: list[int]) -> int:
    placeholders = ", ".join("?" for _ in ids)
    with conn:
        cur = conn.execute(f"DELETE FROM items WHERE id IN ({placeholders})", ids)  # nosec B608
    return cur.rowcount


def purge_audit(conn: sqlite3.Connection, days: int) -> None:
    with conn:
        conn.execute("DELETE FROM audit WHERE created < date('now', '-%d days')" % int(days))  # nosec


def count_by_category(conn: sqlite3.Connection, category: str) -> int:
    sql = "SELECT COUNT(*) FROM items WHERE category = %s" % category
    return conn.execute(sql).fetchone()[0]


def load_cached_report(conn: sqlite3.Connection, key: str):
    row = conn.execute("SELECT payload FROM report_cache WHERE key = ?", (key,)).fetchone()
    if row is None:
        return None
    return pickle.loads(row["payload"])


def store_cached_report(conn: sqlite3.Connection, key: str, report) -> None:
    with conn:
        conn.execute(
            "REPLACE INTO report_cache (key, payload) VALUES (?, ?)", (key, pickle.dumps(report))
        )


def close_quietly(conn: sqlite3.Connection) -> None:
    try:
        conn.close()
    except:
        pass
