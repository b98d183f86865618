"""The SSRF guard of web_fetch, attacked: every refused range through an injected resolver (no
packet ever leaves for a private address: a recording transport proves nothing was sent), DNS
rebinding, the operator allowlist, and TLS still verifying the host name while the connection
goes to the checked IP."""

from __future__ import annotations

import ipaddress
import ssl
from collections.abc import Sequence

import httpx
import pytest

from agentscope_teams import WebAccessError
from agentscope_teams.tools.web import WebConfig, address_problem, fetch_page

from .web_server import Recorder, running

PUBLIC = "93.184.216.34"

REFUSED = {
    "10.0.0.1": "private",
    "172.16.5.4": "private",
    "192.168.1.1": "private",
    "127.0.0.1": "loopback",
    "127.1.2.3": "loopback",
    "::1": "loopback",
    "169.254.169.254": "link-local (cloud metadata service)",
    "169.254.1.1": "link-local",
    "fe80::1": "link-local",
    "100.64.0.1": "carrier-grade NAT",
    "0.0.0.0": "unspecified",
    "::": "unspecified",
    "224.0.0.251": "multicast",
    "ff02::1": "multicast",
    "fd12:3456::1": "private",
    "fc00::1": "private",
    "fec0::1": "private (site-local)",
    "240.0.0.1": "reserved",
    "192.0.2.1": "private",  # TEST-NET-1 (documentation)
    "::ffff:127.0.0.1": "loopback (IPv4 127.0.0.1 inside IPv6)",
    "::ffff:10.0.0.1": "private (IPv4 10.0.0.1 inside IPv6)",
    "::ffff:169.254.169.254": "link-local (cloud metadata service) (IPv4 169.254.169.254 inside IPv6)",
    "2002:a9fe:a9fe::1": "link-local (cloud metadata service) (IPv4 169.254.169.254 inside IPv6)",
    "64:ff9b::7f00:1": "loopback (IPv4 127.0.0.1 inside IPv6)",
}


def resolver_to(*answers: Sequence[str]):  # type: ignore[no-untyped-def]
    """A resolver giving ``answers[i]`` on its i-th call (the last one again afterwards)."""
    calls: list[str] = []

    async def resolve(host: str, port: int) -> Sequence[str]:
        calls.append(host)
        return answers[min(len(calls), len(answers)) - 1]

    resolve.calls = calls  # type: ignore[attr-defined]
    return resolve


@pytest.mark.parametrize("address", sorted(REFUSED))
def test_each_refused_range_is_named(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) == REFUSED[address]


@pytest.mark.parametrize("address", [PUBLIC, "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"])
def test_public_addresses_pass(address: str) -> None:
    assert address_problem(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize("address", sorted(REFUSED))
async def test_a_name_resolving_to_a_refused_address_is_never_connected(address: str) -> None:
    recorder = Recorder()
    config = WebConfig(resolver=resolver_to([address]), transport=recorder)
    with pytest.raises(WebAccessError) as caught:
        await fetch_page("https://innocent.example/page", "read it", config)
    assert caught.value.reason == "blocked_address"
    shown = str(ipaddress.ip_address(address))
    assert "innocent.example" in str(caught.value) and shown in str(caught.value)
    assert recorder.requests == []  # refused before any connection attempt


async def test_control_the_same_name_on_a_public_address_is_fetched() -> None:
    """The control of the attack above: with a public answer the same call goes out."""
    recorder = Recorder()
    config = WebConfig(resolver=resolver_to([PUBLIC]), transport=recorder)
    page = await fetch_page("https://innocent.example/page", "read it", config)
    assert page.content == "hello"
    assert len(recorder.requests) == 1


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/",
        "http://[::1]/",
        "http://[::ffff:a9fe:a9fe]/",
        "http://169.254.169.254/latest/meta-data/",
    ],
)
async def test_literal_addresses_are_checked_without_resolving(url: str) -> None:
    recorder = Recorder()
    resolver = resolver_to([PUBLIC])
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(url, "x", WebConfig(resolver=resolver, transport=recorder))
    assert caught.value.reason == "blocked_address"
    assert recorder.requests == [] and resolver.calls == []  # type: ignore[attr-defined]


async def test_dns_rebinding_connects_to_the_checked_address() -> None:
    """The resolver answers public first, then private (TTL 0): the connection goes to the
    public address that was checked, with the name in the Host header and TLS SNI."""
    recorder = Recorder()
    resolver = resolver_to([PUBLIC], ["169.254.169.254"])
    config = WebConfig(resolver=resolver, transport=recorder)
    await fetch_page("https://rebind.example/a?b=1", "x", config)
    [request] = recorder.requests
    assert request.url.host == PUBLIC and request.url.raw_path == b"/a?b=1"
    assert request.headers["Host"] == "rebind.example"
    assert request.extensions["sni_hostname"] == "rebind.example"
    assert resolver.calls == ["rebind.example"]  # type: ignore[attr-defined]


async def test_a_mixed_answer_with_one_private_address_is_refused() -> None:
    recorder = Recorder()
    config = WebConfig(resolver=resolver_to([PUBLIC, "10.0.0.1"]), transport=recorder)
    with pytest.raises(WebAccessError, match=r"10\.0\.0\.1"):
        await fetch_page("https://mixed.example/", "x", config)
    assert recorder.requests == []


async def test_each_same_host_redirect_is_resolved_and_checked_again() -> None:
    """A same-host redirect re-resolves the name; a private second answer stops the hop."""

    def respond(request: httpx.Request) -> httpx.Response:
        return httpx.Response(302, headers={"Location": "/next"})

    recorder = Recorder(respond)
    resolver = resolver_to([PUBLIC], ["10.0.0.1"])
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(
            "https://hop.example/", "x", WebConfig(resolver=resolver, transport=recorder)
        )
    assert caught.value.reason == "blocked_address"
    assert [r.url.path for r in recorder.requests] == ["/"]
    assert resolver.calls == ["hop.example", "hop.example"]  # type: ignore[attr-defined]


@pytest.mark.parametrize("allow", [["10.1.2.0/24"], ["wiki.corp"], ["corp"]])
async def test_the_operator_allowlist_opens_private_targets(allow: list[str]) -> None:
    recorder = Recorder()
    config = WebConfig(resolver=resolver_to(["10.1.2.3"]), transport=recorder, allow_private=allow)
    await fetch_page("http://wiki.corp/home", "x", config)
    [request] = recorder.requests
    assert request.url.host == "10.1.2.3"
    assert request.url.scheme == "http"  # allowlisted targets keep plain http


async def test_the_allowlist_opens_nothing_else() -> None:
    recorder = Recorder()
    config = WebConfig(
        resolver=resolver_to(["10.9.9.9"]),
        transport=recorder,
        allow_private=["10.1.2.0/24", "wiki.corp"],
    )
    with pytest.raises(WebAccessError, match=r"10\.9\.9\.9"):
        await fetch_page("http://other.corp/", "x", config)
    assert recorder.requests == []


async def test_http_is_upgraded_to_https_for_public_hosts() -> None:
    recorder = Recorder()
    await fetch_page(
        "http://example.com/x", "x", WebConfig(resolver=resolver_to([PUBLIC]), transport=recorder)
    )
    [request] = recorder.requests
    assert (request.url.scheme, request.url.port, request.headers["Host"]) == (
        "https",
        None,
        "example.com",
    )


async def test_unresolvable_names_are_a_tool_error() -> None:
    async def nowhere(host: str, port: int) -> Sequence[str]:
        raise OSError("Name or service not known")

    with pytest.raises(WebAccessError) as caught:
        await fetch_page(
            "https://nowhere.invalid/", "x", WebConfig(resolver=nowhere, transport=Recorder())
        )
    assert caught.value.reason == "unresolvable"


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/",
        "https://user:pw@example.com/",
        "https://evil.com\\@good.com/",
        "https:///nohost",
        "gopher://127.0.0.1:6379/_",
        "https://exa mple.com/",
        "example.com/path",
    ],
)
async def test_urls_that_are_not_plain_http_are_refused(url: str) -> None:
    recorder = Recorder()
    with pytest.raises(WebAccessError) as caught:
        await fetch_page(url, "x", WebConfig(resolver=resolver_to([PUBLIC]), transport=recorder))
    assert caught.value.reason == "invalid_url"
    assert recorder.requests == []


def _tls_site(ca, name: str):  # type: ignore[no-untyped-def]
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(name).configure_cert(server_ctx)
    return running(tls=server_ctx, host_name="web.test")


async def test_tls_verifies_the_host_name_while_connecting_to_the_checked_ip() -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    client_ctx = ssl.create_default_context()
    ca.configure_trust(client_ctx)
    config = WebConfig(
        resolver=resolver_to(["127.0.0.1"]), allow_private=["127.0.0.1/32"], verify=client_ctx
    )
    with _tls_site(ca, "web.test") as site:
        page = await fetch_page(site.url("/page.html"), "x", config)
        assert "Version 2.0" in page.content
        assert site.hosts == [f"web.test:{site.port}"]
    with _tls_site(ca, "other.test") as site, pytest.raises(WebAccessError) as caught:
        await fetch_page(site.url("/page.html"), "x", config)  # certificate for another name
    assert caught.value.reason == "connection" and "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
    lax = ssl.create_default_context()
    ca.configure_trust(lax)
    lax.check_hostname = False  # control: without the name check the same server is read
    control = WebConfig(
        resolver=resolver_to(["127.0.0.1"]), allow_private=["127.0.0.1/32"], verify=lax
    )
    with _tls_site(ca, "other.test") as site:
        assert "Version 2.0" in (await fetch_page(site.url("/page.html"), "x", control)).content
