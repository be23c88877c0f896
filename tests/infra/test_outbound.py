"""Requests to addresses others chose (``infra.outbound``, behind users' pictures and sites'
webhooks): which addresses are refused, with private ones allowed or not; a host resolved once,
its every address checked, and the connection made to the checked address however the name
resolves by then (DNS rebinding), with a real server on loopback."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from infra import outbound

INSIDE = [
    "127.0.0.1",
    "127.255.0.9",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.0.1",
    "100.64.0.1",  # carrier-grade NAT
    "::1",
    "fc00::1",  # unique local
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:10.0.0.1",
    "2002:7f00:1::",  # 6to4 of 127.0.0.1
]
NEVER = [
    "169.254.169.254",  # cloud metadata
    "169.254.0.1",
    "fe80::1",
    "64:ff9b::a9fe:a9fe",  # 169.254.169.254 through NAT64
    "::ffff:169.254.169.254",
    "0.0.0.0",
    "::",
    "224.0.0.1",
    "ff02::1",
]
PUBLIC = ["93.184.215.14", "1.1.1.1", "2606:4700:4700::1111"]


@pytest.mark.parametrize("address", INSIDE)
def test_private_and_loopback_addresses_are_refused_unless_allowed(address):
    assert outbound.address_refusal(address, allow_private=False) == "not a public address"
    assert outbound.address_refusal(address, allow_private=True) is None


@pytest.mark.parametrize("address", NEVER)
def test_link_local_multicast_and_unspecified_addresses_are_refused_even_when_private_ones_are_allowed(address):
    for allowed in (False, True):
        assert outbound.address_refusal(address, allow_private=allowed) is not None


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_are_allowed(address):
    assert outbound.address_refusal(address, allow_private=False) is None


def test_a_name_is_refused_for_what_it_resolves_to_before_any_connection():
    with pytest.raises(outbound.DestinationRefused, match=r"localhost resolves to .*, not a public address"):
        outbound.connection_open("http://localhost:9/", allow_private=False, timeout=1)
    with pytest.raises(outbound.DestinationRefused, match="not an http"):
        outbound.connection_open("file:///etc/passwd", allow_private=True, timeout=1)
    with pytest.raises(outbound.DestinationRefused, match="not an http"):
        outbound.connection_open("http://user:pw@example.com/", allow_private=True, timeout=1)


class _Server:
    """An HTTP server on loopback that keeps the Host header of each request."""

    def __init__(self):
        self.hosts: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                server.hosts.append(self.headers["Host"])
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.http.server_port
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self):
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def test_the_connection_goes_to_the_address_checked_whatever_the_name_resolves_to_later(server, monkeypatch):
    connection, target = outbound.connection_open(
        f"http://localhost:{server.port}/x?y=1", allow_private=True, timeout=2
    )
    assert target == "/x?y=1" and "127.0.0.1" in connection.addresses  # type: ignore[attr-defined]
    # The name now resolves elsewhere (rebinding, to a documentation address nothing answers on):
    # the connection still goes to the address checked, and never asks for the name again.
    real = socket.getaddrinfo
    asked: list[str] = []

    def rebound(host, *args, **kwargs):
        asked.append(host)
        return real("192.0.2.1" if host == "localhost" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebound)
    connection.request("GET", target)
    assert connection.getresponse().status == 204
    connection.close()
    assert "localhost" not in asked
    assert server.hosts == [f"localhost:{server.port}"]  # the Host header still names the host


def test_a_name_with_any_private_address_is_refused_whole(monkeypatch):
    real = socket.getaddrinfo

    def mixed(host, port, *args, **kwargs):
        if host == "mixed.example":  # one public address, one inside
            return real("1.1.1.1", port, *args, **kwargs) + real("10.0.0.1", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", mixed)
    with pytest.raises(outbound.DestinationRefused, match=r"mixed\.example resolves to 10\.0\.0\.1, not a public"):
        outbound.resolve("mixed.example", 80, allow_private=False)


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.1", "2130706433", "0x7f000001", "[::1]", "localhost", "api.localhost", "169.254.169.254"]
)
def test_a_host_certainly_inside_is_refused_without_resolving_a_name(host):
    with pytest.raises(outbound.DestinationRefused):
        outbound.host_check(host, allow_private=False)


def test_a_name_is_left_to_the_check_at_each_request():
    outbound.host_check("hooks.example.com", allow_private=False)  # not resolved: nothing raised
    outbound.host_check("127.0.0.1", allow_private=True)
    with pytest.raises(outbound.DestinationRefused):
        outbound.host_check("169.254.169.254", allow_private=True)
