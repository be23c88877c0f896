"""Requests the service makes to addresses that others chose: users' pictures
(``comments.avatars``) and sites' webhooks (``webhooks.sending``). One piece of code for both,
in the core, since both apps reach out the same way.

The service sits inside a network: its database, its Redis, a cloud's metadata service at
169.254.169.254. A request to an address someone else chose must not reach them (SSRF). So:

- only ``http`` and ``https`` URLs with a host and no credentials;
- the host is resolved here and every address it resolves to must be public; the connection
  is then made to those checked addresses, never to the name again, so a name that resolves
  differently by the time of the connection (DNS rebinding) cannot lead inside;
- a caller that follows redirects opens each hop through ``connection_open`` again (each is
  checked the same way); webhooks follow none.

Private, loopback and other non-public addresses are allowed only where the caller's setting
says so (``AVATARS_FETCH_PRIVATE``, ``WEBHOOKS_DELIVER_PRIVATE``: development, the tests'
servers on loopback, a service on a private network). Link-local addresses (169.254.0.0/16,
fe80::/10: where clouds answer with credentials), multicast and unspecified ones are refused
even then: nothing the service talks to legitimately lives there.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
from urllib.parse import urlsplit

_WEB_SCHEMES = {"http": 80, "https": 443}
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # IPv4 addresses reached through a NAT64 gateway


class DestinationRefused(Exception):
    """A destination the service does not speak to; the message says why, for a log."""


def _embedded_ipv4(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one stands for, where the network would deliver it there."""
    if isinstance(ip, ipaddress.IPv4Address):
        return None
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def address_refusal(address: str, *, allow_private: bool) -> str | None:
    """Why the service may not connect to ``address`` (an IP address), as a phrase ("not a
    public address"), or None when it may."""
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address)
    except ValueError:
        return "not an IP address"
    ip = _embedded_ipv4(ip) or ip
    if ip.is_link_local:
        return "a link-local address"
    if ip.is_multicast or ip.is_unspecified:
        return "not an address to connect to"
    if not allow_private and (not ip.is_global or ip.is_reserved or ip.is_private or ip.is_loopback):
        return "not a public address"
    return None


def _refused(host: str, address: str, reason: str) -> DestinationRefused:
    return DestinationRefused(
        f"{address} is {reason}" if host == address else f"{host} resolves to {address}, {reason}"
    )


def _numeric(host: str) -> list[str]:
    """The addresses ``host`` spells out when it is an IP address in any form the resolver
    takes (``127.1`` and ``0x7f000001`` are 127.0.0.1 to it), without asking DNS; [] for a name."""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM, flags=socket.AI_NUMERICHOST)
    except (OSError, UnicodeError):
        return []
    return [str(info[4][0]) for info in found]


def host_check(host: str, *, allow_private: bool) -> None:
    """Refuse, when a URL is registered, a host that is certainly not public: an IP address that
    is not, or ``localhost``. Names are not resolved here: what one resolves to may change, and
    it is checked again on every request (``connection_open``)."""
    host = host.strip("[]").rstrip(".").lower()
    if not allow_private and (host == "localhost" or host.endswith(".localhost")):
        raise DestinationRefused(f"{host} is a loopback name")
    for address in _numeric(host):
        reason = address_refusal(address, allow_private=allow_private)
        if reason is not None:
            raise _refused(host, address, reason)


def resolve(host: str, port: int, *, allow_private: bool) -> list[str]:
    """The addresses ``host`` resolves to now, each checked; ``DestinationRefused`` when any of
    them may not be spoken to (a name that answers with one public and one private address is
    refused, rather than trusted to pick the public one), ``OSError`` when it resolves to none."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except UnicodeError as exc:
        raise OSError(f"{host}: {exc}") from exc
    addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
    if not addresses:
        raise OSError(f"{host} resolves to no address")
    for address in addresses:
        reason = address_refusal(address, allow_private=allow_private)
        if reason is not None:
            raise _refused(host, address, reason)
    return addresses


def connection_open(url: str, *, allow_private: bool, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """A connection for ``url`` (not connected yet) pinned to the addresses its host resolves to
    now, all checked, and the request's target (path and query). ``DestinationRefused`` for a URL
    or an address the service does not speak to; ``OSError`` when the name does not resolve.
    ``timeout`` bounds each wait on the socket (the connection, each send and read)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise DestinationRefused("not a valid URL") from None
    scheme = parts.scheme.lower()
    if scheme not in _WEB_SCHEMES or not parts.hostname or parts.username or parts.password:
        raise DestinationRefused(f"not an http(s) URL with a host and no credentials: {url[:100]}")
    port = port or _WEB_SCHEMES[scheme]
    addresses = resolve(parts.hostname, port, allow_private=allow_private)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    kind = PinnedTLSConnection if scheme == "https" else PinnedConnection
    return kind(parts.hostname, port, addresses=addresses, timeout=timeout), target


class PinnedConnection(http.client.HTTPConnection):
    """Connects to the addresses checked (in turn, as ``socket.create_connection`` tries a name's),
    whatever the name resolves to by then. The ``Host`` header still names the host."""

    def __init__(self, host: str, port: int, *, addresses: list[str], timeout: float):
        super().__init__(host, port, timeout=timeout)
        self.addresses = addresses

    def connect(self) -> None:
        error: OSError | None = None
        for address in self.addresses:
            try:
                self.sock = socket.create_connection((address, self.port), self.timeout)
                return
            except OSError as exc:
                error = exc
        raise error or OSError("no address to connect to")


class PinnedTLSConnection(PinnedConnection):
    """The same over TLS, the certificate checked against the name."""

    default_port = 443
    tls = ssl.create_default_context()

    def connect(self) -> None:
        super().connect()
        self.sock = self.tls.wrap_socket(self.sock, server_hostname=self.host)
