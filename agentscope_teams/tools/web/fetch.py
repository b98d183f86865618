"""``fetch_page``: one guarded HTTP GET of a page, as ``web_fetch`` runs it.

Per hop: resolve the host through the SSRF guard (:mod:`.ssrf`), connect to the checked address
(the request goes to the IP; ``Host`` and TLS SNI carry the name, and TLS verifies the certificate
against the name), read at most ``max_bytes`` of the decoded body (a gzip or deflate body is
inflated a bounded piece at a time: :mod:`.inflate`). Same-host redirects (``http`` -> ``https``
allowed) are followed, each re-resolved and re-checked, up to ``max_redirects``; a redirect to
another host is not followed but returned, so the model calls ``web_fetch`` again and that call
passes the permission rules and the guard on its own. The whole fetch runs under ``timeout``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urljoin

import anyio

from ...errors import WebAccessError
from .config import WebConfig
from .convert import content_kind, html_to_markdown
from .inflate import ACCEPT_ENCODING, read_body
from .output import WebPage
from .urls import WebUrl, parse_web_url

if TYPE_CHECKING:  # httpx is imported when a fetch runs: ``import agentscope_teams`` stays cheap
    import httpx

_ACCEPT = "text/html, text/markdown;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.1"


def _same_origin(a: WebUrl, b: WebUrl) -> bool:
    """Same host and port, or the https form of an http URL (a downgrade is another origin)."""
    return a.host == b.host and (
        (a.scheme, a.port) == (b.scheme, b.port)
        or (a.scheme == "http" and (b.scheme, b.port) == ("https", a.upgraded().port))
    )


def _decode(body: bytes, response: httpx.Response) -> str:
    return body.decode(response.charset_encoding or "utf-8", errors="replace")


async def _page(
    response: httpx.Response, url: str, start: str, prompt: str, config: WebConfig
) -> WebPage:
    if response.status_code >= 400:
        raise WebAccessError(
            f"{url} answered HTTP {response.status_code} {response.reason_phrase}",
            url=url,
            reason="http_status",
            status=response.status_code,
        )
    content_type = response.headers.get("content-type")
    if content_type:  # refuse an unreadable type before downloading its body
        content_kind(content_type, b"", url)
    body, cut_bytes = await read_body(response, config.max_bytes, url)
    kind = content_kind(content_type, body[:1024], url)
    if kind == "html":
        raw = _decode(body, response) if response.charset_encoding else body
        # abandoned at the timeout: a page that converts for ever must not hold the call
        text = await anyio.to_thread.run_sync(html_to_markdown, raw, url, abandon_on_cancel=True)
    else:
        text = _decode(body, response)
    total = len(text)
    return WebPage(
        url=start,
        final_url=url,
        status=response.status_code,
        content_type=response.headers.get("content-type", ""),
        kind=kind,
        prompt=prompt,
        content=text[: config.max_chars],
        total_chars=total,
        bytes_read=len(body),
        body_truncated=cut_bytes,
    )


async def _hop(
    client: httpx.AsyncClient, target: WebUrl, config: WebConfig
) -> tuple[WebUrl, httpx.Response]:
    """(the URL requested, its response): the host resolved and checked, http upgraded to https
    unless the operator's allowlist opened the address, the request sent to the checked IP."""
    import httpx

    address = await config.guard.resolve(target.host, target.port, str(target))
    if config.upgrade_http and not config.guard.allows(target.host, address):
        target = target.upgraded()
    path, _, query = target.target.partition("?")
    ip_url = httpx.URL(scheme=target.scheme, host=address, port=target.port, path=path)
    if query:
        ip_url = ip_url.copy_with(query=query.encode())
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    request = client.build_request(
        "GET",
        ip_url,
        headers={
            "Host": target.authority,
            "Accept": _ACCEPT,
            "Accept-Encoding": ACCEPT_ENCODING,  # the codings read_body inflates with a bound
            "User-Agent": config.user_agent,
        },
        extensions=extensions,
    )
    return target, await client.send(request, stream=True)


async def _fetch(url: str, prompt: str, config: WebConfig) -> WebPage:
    import httpx

    target = parse_web_url(url)
    transport = (
        config.transport()
        if config.transport
        else httpx.AsyncHTTPTransport(verify=config.verify, retries=0)
    )
    async with httpx.AsyncClient(
        transport=transport, trust_env=False, follow_redirects=False, timeout=config.timeout
    ) as client:
        for _ in range(config.max_redirects + 1):
            target, response = await _hop(client, target, config)
            try:
                location = response.headers.get("location")
                if response.is_redirect and location:
                    nxt = parse_web_url(urljoin(str(target), location))
                    if not _same_origin(target, nxt):
                        return WebPage.redirect(
                            url, str(target), str(nxt), response.status_code, prompt
                        )
                    target = nxt
                    continue
                return await _page(response, str(target), url, prompt, config)
            finally:
                await response.aclose()
    raise WebAccessError(
        f"{url} redirected more than {config.max_redirects} times (last: {target}); "
        "it may loop; try the final page's URL",
        url=url,
        reason="too_many_redirects",
    )


async def fetch_page(url: str, prompt: str, config: WebConfig) -> WebPage:
    """Fetch ``url`` as described in the module docstring; raises :class:`WebAccessError`."""
    import httpx

    try:
        with anyio.fail_after(config.timeout):
            return await _fetch(url, prompt, config)
    except TimeoutError:
        raise WebAccessError(
            f"fetching {url} took longer than {config.timeout:g} s and was stopped",
            url=url,
            reason="timeout",
        ) from None
    except httpx.TimeoutException:
        raise WebAccessError(f"fetching {url} timed out", url=url, reason="timeout") from None
    except httpx.HTTPError as exc:
        raise WebAccessError(
            f"cannot fetch {url}: {type(exc).__name__}: {exc}", url=url, reason="connection"
        ) from None
