"""Every relative link in the README and docs/ names a file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_relative_links_resolve() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    broken = [
        f"{page.relative_to(ROOT)}: {target}"
        for page in pages
        for target in LINK.findall(page.read_text(encoding="utf-8"))
        if not re.match(r"[a-z][a-z0-9+.-]*:|#", target)  # a URL or an anchor on the page
        and not (page.parent / target.split("#")[0]).exists()
    ]
    assert broken == [], "links to files that do not exist:\n" + "\n".join(broken)
