"""Hard-coded keys in well-known formats, in any string literal (docstrings excepted).

ruff's ``S105``-``S107`` (bandit's ``B105``-``B107``) look at the *name* a string is bound to
(``password = "..."``); a key in a recognisable format bound to any other name
(``S3_ACCESS_KEY_ID = "AKIA..."``, a token in a dict or a call) passes them. This rule looks at the
*value*: AWS key ids, GitHub, OpenAI-style, Stripe, Slack and Google keys, private key blocks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ._astutil import ModuleContext, docstring_nodes, str_constant
from .findings import Finding, Severity

KEY_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    (
        "a GitHub token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ),
    ("an OpenAI-style API key", re.compile(r"(?<![\w-])sk-(?:proj-)?[A-Za-z0-9_-]{20,}")),
    ("a Stripe live key", re.compile(r"\b[rs]k_live_[0-9A-Za-z]{16,}")),
    ("a Slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")),
]


def check(ctx: ModuleContext) -> Iterator[Finding]:
    docstrings = docstring_nodes(ctx.nodes)
    for node in ctx.nodes:
        text = str_constant(node)
        if text is None or node in docstrings:
            continue
        if kind := known_key(text):
            yield ctx.finding(
                node, "security", "hardcoded-secret", Severity.MEDIUM,
                f"string literal contains {kind}: anyone with the source can use it",
            )  # fmt: skip


def known_key(text: str) -> str | None:
    """What kind of key ``text`` contains, or None (texts mentioning "example" never count)."""
    if "example" in text.lower():
        return None
    return next((kind for kind, pattern in KEY_PATTERNS if pattern.search(text)), None)
