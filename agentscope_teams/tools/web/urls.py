"""Web URLs and domains: the one parser ``web_fetch`` and its permission rules share, and the
domain matcher behind ``WebFetch(domain:…)`` rules and ``web_search`` domain filters.

The permission engine and the fetcher read a URL through :func:`parse_web_url` alone, so the host a
rule was matched against is the host that is fetched (no parser differential between the two).
Standard library only: the permission engine imports this module on every run.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

from ...errors import WebAccessError

DOMAIN_PREFIX = "domain:"
"""The pattern prefix of domain rules: ``WebFetch(domain:example.com)``."""

_DEFAULT_PORTS = {"http": 80, "https": 443}
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


@dataclass(frozen=True)
class WebUrl:
    """An absolute http(s) URL taken apart: ``host`` is lower-case ASCII (IDNA) without brackets
    or trailing dot; ``target`` is the path and query sent on the request line."""

    scheme: str
    host: str
    port: int
    target: str

    @property
    def is_ip(self) -> bool:
        return _ip(self.host) is not None

    @property
    def authority(self) -> str:
        """``host[:port]`` as a Host header says it (the port only when not the default)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if _DEFAULT_PORTS[self.scheme] == self.port else f"{host}:{self.port}"

    def __str__(self) -> str:
        return f"{self.scheme}://{self.authority}{self.target}"

    def upgraded(self) -> WebUrl:
        """The https form of an http URL (port 80 becomes 443, another port is kept)."""
        if self.scheme != "http":
            return self
        return replace(self, scheme="https", port=443 if self.port == 80 else self.port)


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _invalid(url: str, why: str) -> WebAccessError:
    return WebAccessError(
        f"invalid URL {url[:300]!r}: {why}; give a full http:// or https:// URL such as "
        "https://example.com/page",
        url=url,
        reason="invalid_url",
    )


def _host(url: str, raw: str) -> str:
    host = raw.rstrip(".")
    if _ip(host) is not None:
        return str(_ip(host))
    try:
        host = host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        raise _invalid(url, f"host {raw!r} is not a valid domain name") from None
    if not host or not all(_LABEL.match(label) for label in host.split(".")):
        raise _invalid(url, f"host {raw!r} is not a valid domain name")
    return host


def parse_web_url(url: str) -> WebUrl:
    """``url`` taken apart; raises :class:`WebAccessError` (``invalid_url``) for anything but an
    absolute http(s) URL with a valid host, and for URLs carrying credentials (``user@host``)."""
    if not isinstance(url, str) or any(c in url for c in "\r\n\t\x00"):
        raise _invalid(str(url), "it contains control characters")
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in _DEFAULT_PORTS:
        raise _invalid(url, f"scheme {parts.scheme or '(none)'!r} is not http or https")
    if "@" in parts.netloc:
        raise _invalid(url, "URLs with credentials (user@host) are not fetched")
    try:
        raw_host, port = parts.hostname, parts.port
    except ValueError as exc:
        raise _invalid(url, str(exc)) from None
    if not raw_host:
        raise _invalid(url, "it has no host")
    scheme = parts.scheme.lower()
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return WebUrl(scheme, _host(url, raw_host), port or _DEFAULT_PORTS[scheme], target)


def normalize_domain(domain: str) -> str:
    """A domain as rules and filters compare it: lower case, no scheme, path, port or trailing dot
    (``"https://Docs.Example.com/x"`` -> ``"docs.example.com"``); ``*.`` is kept."""
    text = domain.strip().lower()
    if "://" in text:
        text = text.split("://", 1)[1]
    text = text.split("/", 1)[0].rstrip(".")
    if text.startswith("[") and "]" in text:
        return text[1 : text.index("]")]
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


def host_matches(host: str, domain: str) -> bool:
    """True if ``host`` is ``domain`` or one of its subdomains. ``*`` matches every host and
    ``*.example.com`` only the subdomains of example.com. IP addresses match only themselves."""
    domain = normalize_domain(domain)
    host = host.lower().rstrip(".")
    if domain == "*":
        return True
    if domain.startswith("*."):
        return host.endswith(domain[1:])
    return host == domain or (_ip(host) is None and host.endswith("." + domain))


def host_in(host: str, domains: Iterable[str]) -> bool:
    """True if ``host`` matches any of ``domains`` (:func:`host_matches`)."""
    return any(host_matches(host, d) for d in domains)


def web_rule_matches(pattern: str, tool: Any, arguments: Mapping[str, Any]) -> bool:
    """Whether a ``domain:…`` permission pattern matches a call: the host of the call's URL (its
    primary argument) is the domain or a subdomain of it. A URL that does not parse matches no
    rule (the tool refuses it anyway)."""
    name = getattr(tool, "primary_argument", None)
    value = arguments.get(name) if name else None
    if not isinstance(value, str):
        return False
    try:
        host = parse_web_url(value).host
    except WebAccessError:
        return False
    return host_matches(host, pattern[len(DOMAIN_PREFIX) :])


def domain_pattern(url: str) -> str | None:
    """The ``domain:host`` pattern remembered when a user always allows a fetch of ``url``."""
    try:
        return DOMAIN_PREFIX + parse_web_url(url).host
    except WebAccessError:
        return None
