"""Hard-coded secrets: string literals bound to secret-named targets, and well-known key formats.

A value counts when it is a literal without whitespace that is not a placeholder (``""``,
``"<token>"``, ``"changeme"``, ``"${API_KEY}"``, ``"****"``, an ENV_VAR_NAME, anything containing
"example"). Values of token/secret/key names must also look random (8+ characters, letters and
digits); comparisons count only for password names (``password == "letmein"``). Values read from
the environment or a file are never literals, so they are never reported.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from ._astutil import FUNCTION_TYPES, ModuleContext, docstring_nodes, name_words, str_constant
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
SECRET_LAST_WORDS = {"password", "passwd", "pwd", "passphrase", "secret", "token", "apikey"}
SECRET_KEY_PREFIXES = {"api", "secret", "private", "access", "auth", "signing", "encryption"}
NOT_A_SECRET_WORDS = {"max", "min", "num", "count", "len", "length", "type", "field", "prompt"}
PLACEHOLDERS = {
    "changeme", "change-me", "change_me", "changeit", "replaceme", "replace-me", "todo", "tbd",
    "fixme", "none", "null", "dummy", "placeholder", "redacted", "secret", "password", "token",
    "test", "pass", "passwd", "foo", "bar",
}  # fmt: skip


def check(ctx: ModuleContext) -> Iterator[Finding]:
    reported: set[int] = set()
    for owner, name, value in _named_values(ctx.nodes):
        text = str_constant(value)
        if text is None or not is_secret_name(name):
            continue
        kind = _known_key(text)
        if kind is None and not _looks_like_secret(name, text):
            continue
        reported.add(id(value))
        sev = Severity.HIGH if kind else Severity.MEDIUM
        what = f" ({kind})" if kind else ""
        yield _finding(ctx, owner, sev, f"`{name}` holds a hard-coded secret{what}")
    docstrings = docstring_nodes(ctx.nodes)
    for node in ctx.nodes:
        text = str_constant(node)
        if text is None or id(node) in reported or node in docstrings:
            continue
        if kind := _known_key(text):
            yield _finding(ctx, node, Severity.HIGH, f"string literal contains {kind}")


def _finding(ctx: ModuleContext, node: ast.AST, sev: Severity, what: str) -> Finding:
    return ctx.finding(
        node, "security", "hardcoded-secret", sev,
        f"{what}: anyone with the source (or its history) can use it. Revoke it, then read it "
        "from the environment or a secret store (e.g. os.environ['NAME']).",
    )  # fmt: skip


def is_secret_name(name: str) -> bool:
    words = name_words(name)
    if not words or NOT_A_SECRET_WORDS & set(words):
        return False
    if words[-1] in SECRET_LAST_WORDS:
        return True
    return len(words) >= 2 and words[-1] == "key" and words[-2] in SECRET_KEY_PREFIXES


def is_placeholder(text: str) -> bool:
    t = text.strip()
    low = t.lower()
    return (
        not any(c.isalnum() for c in t)
        or len(set(t)) == 1
        or low in PLACEHOLDERS
        or "example" in low
        or low.startswith(("your-", "your_", "<", "${", "{{", "%("))
        or re.fullmatch(r"[A-Z][A-Z0-9_]*", t) is not None
    )


def _looks_like_secret(name: str, text: str) -> bool:
    """No placeholder, field name (API_KEY = "api_key") or prose; a token or key is 8+ characters
    with letters and digits (``_DEFAULT_TOKEN = "_sa_default"`` is a sentinel, not a secret)."""
    if (
        is_placeholder(text)
        or name_words(text) == name_words(name)
        or any(c.isspace() for c in text)
    ):
        return False
    if _is_password_name(name):
        return True
    return len(text) >= 8 and any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def _is_password_name(name: str) -> bool:
    return name_words(name)[-1:] in (["password"], ["passwd"], ["pwd"], ["passphrase"])


def _known_key(text: str) -> str | None:
    if "example" in text.lower():
        return None
    return next((kind for kind, pattern in KEY_PATTERNS if pattern.search(text)), None)


def _named_values(nodes: list[ast.AST]) -> Iterator[tuple[ast.AST, str, ast.expr]]:
    """(node to report at, name, value) for every literal bound to or compared with a name."""
    for node in nodes:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if (name := _target_name(t)) is not None:
                    yield node, name, node.value
        elif isinstance(node, ast.keyword) and node.arg is not None:
            yield node.value, node.arg, node.value
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if (key := str_constant(k)) is not None:
                    yield v, key, v
        elif isinstance(node, ast.Compare) and len(node.comparators) == 1:
            if isinstance(node.ops[0], ast.Eq | ast.NotEq):
                a, b = node.left, node.comparators[0]
                for named, other in ((a, b), (b, a)):
                    name = _target_name(named)
                    if name is not None and _is_password_name(name):  # `token == "def"` is a lexer
                        yield node, name, other
        elif isinstance(node, FUNCTION_TYPES):
            args = [*node.args.posonlyargs, *node.args.args]
            for arg, default in zip(
                args[len(args) - len(node.args.defaults) :], node.args.defaults, strict=True
            ):
                yield default, arg.arg, default
            for arg, kw_default in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True):
                if kw_default is not None:
                    yield kw_default, arg.arg, kw_default


def _target_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
