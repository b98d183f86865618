"""The one home for keeping a store URL's secrets out of output: start lines, logs, errors, reprs.

:func:`redact_url` masks what a driver would use as a credential:

* the password of the userinfo (``user:***@host``), found up to the **last** ``@`` before the path or
  query, so a password holding a raw ``@`` (or ``/``) is masked whole instead of half read as host;
* the value of every query parameter whose name says it is a credential (``password``,
  ``passwd``, ``pwd``, ``sslpassword``, ``token``, ``auth``, ``secret``, ``api_key``, ...: see
  :func:`is_secret_name`); redis-py and asyncpg both honour ``?password=``;
* each node's userinfo of a multi-host URL (``redis+cluster://u:p@h1:1,u:p@h2:2/``).

:func:`redact_text` masks the same secrets wherever they appear in other text (a driver's error
message quoting the URL or a piece of it). Both are conservative: text that might be a secret is
masked, and the host part is kept so that the message still says where.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, unquote_plus

MASK = "***"

#: Query parameter names (lower case, ``-`` read as ``_``) whose values are credentials.
_SECRET_WORDS = ("pass", "pwd", "token", "secret", "auth", "credential", "apikey", "api_key")
_SECRET_NAMES = frozenset({"key", "sslkey_password", "private_key", "access_key", "signature"})
#: A leaked fragment of a password shorter than this is not searched for on its own.
_MIN_PIECE = 4


def is_secret_name(name: str) -> bool:
    """True if a URL query parameter called ``name`` carries a credential."""
    low = unquote_plus(name).strip().lower().replace("-", "_")
    return low in _SECRET_NAMES or any(word in low for word in _SECRET_WORDS)


def _split(url: str) -> tuple[str, str, str, str]:
    """(``scheme://``, authority, path, ``?query`` or ``#fragment``), the authority read
    conservatively: with an ``@`` before the query, it runs to the first ``/`` after the last
    such ``@`` (a password may hold a raw ``@`` or ``/``); else to the first ``/``."""
    head, sep, rest = url.partition("://")
    if not sep:
        return "", "", url, ""
    before_query = re.split(r"[?#]", rest, maxsplit=1)[0]
    start = before_query.rfind("@") + 1  # 0 when there is no userinfo
    slash = before_query.find("/", start)
    cut = len(before_query) if slash < 0 else slash
    authority, tail = rest[:cut], rest[cut:]
    found = re.search(r"[?#]", tail)
    if found is None:
        return head + sep, authority, tail, ""
    return head + sep, authority, tail[: found.start()], tail[found.start() :]


def _userinfo_secrets(authority: str) -> list[str]:
    if "@" not in authority:
        return []
    if "," in authority and _nodes_each_have_userinfo(authority):
        return [s for node in authority.split(",") for s in _userinfo_secrets(node)]
    userinfo = authority.rpartition("@")[0]
    _user, colon, password = userinfo.partition(":")
    return [password] if colon else []


def _nodes_each_have_userinfo(authority: str) -> bool:
    nodes = authority.split(",")
    return len(nodes) > 1 and all("@" in n for n in nodes)


def _mask_authority(authority: str) -> str:
    if "@" not in authority:
        return authority
    if "," in authority and _nodes_each_have_userinfo(authority):
        return ",".join(_mask_authority(node) for node in authority.split(","))
    userinfo, _, host = authority.rpartition("@")
    user, colon, _password = userinfo.partition(":")
    return f"{user}:{MASK}@{host}" if colon else f"{userinfo}@{host}"


def _mask_query(query: str) -> str:
    """``?a=1&password=x#frag`` -> ``?a=1&password=***#frag``."""
    body, hmark, frag = query[1:].partition("#")
    parts = []
    for item in re.split(r"([&;])", body):
        name, eq, _value = item.partition("=")
        parts.append(f"{name}={MASK}" if eq and is_secret_name(name) else item)
    return "?" + "".join(parts) + hmark + frag


def _query_secrets(query: str) -> list[str]:
    found = []
    for item in re.split(r"[&;]", query[1:].partition("#")[0]):
        name, eq, value = item.partition("=")
        if eq and value and is_secret_name(name):
            found.append(value)
    return found


def redact_url(url: str) -> str:
    """``url`` with its credentials replaced by ``***`` (see the module docs for which)."""
    scheme, authority, path, query = _split(url)
    if not scheme:
        return url
    masked_query = _mask_query(query) if query.startswith("?") else query
    return scheme + _mask_authority(authority) + path + masked_query


def url_secrets(url: str) -> list[str]:
    """Every credential ``url`` holds, as written and percent-decoded, with the fragments a
    parser may have split it into (longest first): what :func:`redact_text` masks."""
    scheme, authority, _path, query = _split(url)
    if not scheme:
        return []
    raw = _userinfo_secrets(authority) + (_query_secrets(query) if query.startswith("?") else [])
    found: set[str] = set()
    for secret in raw:
        for form in (secret, unquote(secret), unquote_plus(secret)):
            found.add(form)
            found.update(p for p in re.split(r"[@/?#:&;,]", form) if len(p) >= _MIN_PIECE)
    found.discard("")
    return sorted(found, key=len, reverse=True)


def redact_text(text: str, url: str) -> str:
    """``text`` (an error message, a log line) with every secret of ``url`` replaced by ``***``,
    and any copy of ``url`` itself in its redacted form."""
    text = text.replace(url, redact_url(url))
    for secret in url_secrets(url):
        text = text.replace(secret, MASK)
    return text
