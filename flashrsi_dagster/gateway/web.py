"""The web for runs whose role has `web.enabled`: `POST /v1/web/fetch {"url": ...}` and
`POST /v1/web/search {"query": ...}` (a search is a fetch of the role's search results page,
`web.search_url`, with the query in it).

The jail has no network but the gateway, so a run's web goes through here or nowhere. A
`direct` fetch is made by the gateway itself, to public addresses only: the gateway runs on the
host, and a fetch of `http://127.0.0.1:...` or of a private address would reach the host's own
services (the gateway's host listener among them) that the jail exists to keep out of reach.
The name is resolved once and the connection made to the checked address, so a name that
resolves differently the second time (DNS rebinding) cannot slip past. Redirects are not
followed: the model reads the `location` and fetches it again (checked again).

The answer is JSON: `{"url", "status", "content_type", "text", "truncated"}`, or a refusal.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import ssl
from typing import Any
from urllib.parse import quote, quote_plus, urlsplit

from flashrsi_dagster.gateway import errors
from flashrsi_dagster.gateway.grants import Grant, WebAccess

MAX_URL = 2048
_TLS = ssl.create_default_context()


def fetch_page(grant: Grant, request: dict[str, Any] | None) -> dict[str, Any]:
    """The page at `request["url"]`, as the run's web access allows; `Refusal` otherwise."""
    access = _access(grant)
    url = (request or {}).get("url")
    if not isinstance(url, str) or len(url) > MAX_URL:
        raise errors.bad_request(
            f'gateway: expected {{"url": "http(s)://..."}} under {MAX_URL} chars'
        )
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises for a port out of range
    except ValueError as exc:  # the run's own bad input, not a gateway bug
        raise errors.bad_request(f"gateway: not a valid URL: {url!r}: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise errors.bad_request(f"gateway: not an http(s) URL: {url!r}")
    if access.source == "simulator":
        return _from_simulator(grant, "/web/fetch", {"url": url}, access)
    return _direct(url, access)


def search_page(grant: Grant, request: dict[str, Any] | None) -> dict[str, Any]:
    """The results page for `request["query"]`, as the run's web access allows."""
    access = _access(grant)
    query = (request or {}).get("query")
    if not isinstance(query, str) or not query.strip() or len(query) > MAX_URL:
        raise errors.bad_request(f'gateway: expected {{"query": "..."}} under {MAX_URL} chars')
    if access.source == "simulator":
        return _from_simulator(grant, "/web/search", {"query": query}, access)
    if access.search_url is None:
        raise errors.forbidden("gateway: this run's role has no search page (web.search_url)")
    return _direct(access.search_url.replace("{query}", quote_plus(query)), access)


def _access(grant: Grant) -> WebAccess:
    if grant.web is None:
        raise errors.forbidden(
            "gateway: web access is off for this run's role (set its web.enabled: true)"
        )
    return grant.web


def _direct(url: str, access: WebAccess) -> dict[str, Any]:
    parts = urlsplit(url)
    host, https = parts.hostname or "", parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    address = _public_address(host, port)
    try:
        sock = socket.create_connection((address, port), timeout=access.timeout)
        if https:
            sock = _TLS.wrap_socket(sock, server_hostname=host)
        conn = http.client.HTTPConnection(host, port, timeout=access.timeout)
        conn.sock = sock  # connected to the checked address; Host still names `host`
        target = _ascii((parts.path or "/") + (f"?{parts.query}" if parts.query else ""))
        conn.request("GET", target, headers={"User-Agent": "FlashRSI-gateway", "Accept": "*/*"})
        response = conn.getresponse()
        data = response.read(access.max_bytes + 1)
        conn.close()
    except (OSError, http.client.HTTPException) as exc:
        message = f"gateway: fetching {url} failed: {type(exc).__name__}: {exc}"
        raise errors.bad_gateway(message) from None
    page = _page(url, response.status, response.getheader("Content-Type") or "", data, access)
    if location := response.getheader("Location"):
        page["location"] = location
    return page


def _ascii(target: str) -> str:
    """`target` with each character past ASCII percent-encoded as UTF-8, as a browser sends
    it: http.client writes the request line in ASCII, and raised on `/wiki/Köln` (a gateway
    bug, so an infrastructure fault any run could stage with one fetch)."""
    return "".join(c if c.isascii() else quote(c, safe="", errors="replace") for c in target)


def _public_address(host: str, port: int) -> str:
    """The address to connect to, when every address `host` has is public."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise errors.bad_gateway(f"gateway: cannot resolve {host!r}: {exc}") from None
    except UnicodeError as exc:  # IDNA: a label empty or past 63 characters, a bad character
        # The run's own bad input: raised on, a gateway bug, the infrastructure's fault (a
        # rerun a harness could buy with one fetch).
        raise errors.bad_request(f"gateway: not a valid host name: {host!r}: {exc}") from None
    addresses = [info[4][0] for info in infos]
    private = [a for a in addresses if not _is_public(a) or _is_local(a)]
    if not addresses or private:
        raise errors.forbidden(
            f"gateway: {host!r} resolves to a non-public address ({', '.join(private)}): "
            "the web is public addresses only"
        )
    return addresses[0]


_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _is_local(text: str) -> bool:
    """An address of this host (a server with a public address on its interface): the host's
    services listening on all addresses answer there as on loopback. Only a local address
    can be bound (unless `ip_nonlocal_bind` is set, when every fetch is refused: closed)."""
    address = ipaddress.ip_address(text.split("%")[0])
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((text, 0))
    except OSError:
        return False
    return True


def _is_public(text: str) -> bool:
    """A global address, which for an IPv6 address that carries an IPv4 one (IPv4-mapped or
    -compatible, 6to4, Teredo, NAT64: `is_global` passes most of them) means that the IPv4
    address is global too: a host with a tunnel or a NAT64 gateway delivers
    `[64:ff9b::7f00:1]` to 127.0.0.1."""
    address = ipaddress.ip_address(text.split("%")[0])
    if not address.is_global:
        return False
    if isinstance(address, ipaddress.IPv4Address):
        return True
    low = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    carried = [address.ipv4_mapped, address.sixtofour, *(address.teredo or ())]
    if address in _NAT64 or int(address) >> 32 == 0:
        carried.append(low)
    return all(v4.is_global for v4 in carried if v4 is not None)


def _from_simulator(
    grant: Grant, path: str, request: dict[str, str], access: WebAccess
) -> dict[str, Any]:
    """The offline simulator's deterministic page, asked at the run's upstream."""
    upstream = grant.upstream
    scheme, host, port = upstream.origin
    cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
    try:
        conn = cls(host, port, timeout=access.timeout)
        headers = {"Content-Type": "application/json"}
        conn.request("POST", f"{upstream.path_prefix}{path}", json.dumps(request), headers)
        response = conn.getresponse()
        answer = json.loads(response.read(access.max_bytes * 2 + 4096))
        conn.close()
    except (OSError, ValueError, http.client.HTTPException) as exc:
        raise errors.bad_gateway(f"gateway: the simulator's web failed: {exc}") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("text"), str):
        raise errors.bad_gateway("gateway: the simulator's web answered no page")
    data, url = answer["text"].encode(), str(answer.get("url", ""))
    return _page(url, answer.get("status", 200), str(answer.get("content_type", "")), data, access)


def _page(url: str, status: Any, content_type: str, data: bytes, access: WebAccess) -> dict:
    truncated = len(data) > access.max_bytes
    charset = "utf-8"
    for part in content_type.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.lower() == "charset" and value:
            charset = value.strip('"')
    try:
        text = data[: access.max_bytes].decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        text = data[: access.max_bytes].decode("utf-8", errors="replace")
    return {
        "url": url,
        "status": status if isinstance(status, int) else 200,
        "content_type": content_type,
        "text": text,
        "truncated": truncated,
    }
