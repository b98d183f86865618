"""Price formulas, plugins and maintenance jobs."""

from __future__ import annotations

import ast
import logging
import marshal
import os
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger(__name__)

PLUGIN_DIR = Path(__file__).parent / "plugins"


def apply_price_formula(formula: str, price: float, qty: int) -> float:
    """Evaluate a pricing formula from the settings, e.g. "price * 0.9 if qty > 100 else price"."""
    return eval(formula, {"__builtins__": {}}, {"price": price, "qty": qty})


def parse_tag_list(text: str) -> list[str]:
    value = ast.literal_eval(text)
    return [str(tag) for tag in value]


def load_plugin(name: str) -> dict:
    namespace: dict = {}
    source = (PLUGIN_DIR / f"{name}.py").read_text()
    exec(source, namespace)
    return namespace


def archive_reports(report_dir: str, archive_name: str) -> None:
    subprocess.run(f"tar czf {archive_name} -C {report_dir} .", shell=True, check=True)


def disk_usage(path: str) -> str:
    return os.popen("du -sh " + path).read().strip()


def restart_worker() -> None:
    subprocess.run(["systemctl", "restart", "stockroom-worker"], check=True)


def free_space(path: str) -> int:
    return shutil.disk_usage(path).free


def load_snapshot(path: Path):
    with open(path, "rb") as fh:
        return marshal.loads(fh.read())


def cleanup_tmp(directory: Path) -> int:
    removed = 0
    for entry in directory.glob("*.tmp"):
        try:
            entry.unlink()
            removed += 1
        except FileNotFoundError:
            continue
        except OSError as exc:
            log.warning("could not remove %s: %s", entry, exc)
    return removed
