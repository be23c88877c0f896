"""A webhook receiver on loopback for the tests: a real HTTP server in a thread that answers as
each path is told to (a status, or hanging past the sender's timeout) and checks every request's
signature twice: with the algorithm docs/API.md documents, written out here rather than imported
from the app (a mistake in the app's signing cannot verify itself), and with the Standard
Webhooks reference library, as a receiver using an existing verifier would."""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

HANG = "hang"  # answer nothing until the test ends (past the sender's timeout)


def verify(secret: str, headers, body: bytes, *, tolerance: int = 300) -> bool:
    """docs/API.md, "Webhooks": HMAC-SHA256 with the base64-decoded part of the secret after
    ``whsec_``, over ``<webhook-id>.<webhook-timestamp>.<body>``, base64, in
    ``webhook-signature`` as ``v1,<signature>`` (one of several, space-separated); the timestamp
    within ``tolerance`` seconds of now."""
    msg_id, timestamp = headers.get("webhook-id"), headers.get("webhook-timestamp")
    if not msg_id or not timestamp or not timestamp.isdigit() or abs(time.time() - int(timestamp)) > tolerance:
        return False
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = base64.b64encode(
        hmac.new(key, f"{msg_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    ).decode()
    return any(
        version == "v1" and hmac.compare_digest(signature, expected)
        for version, _, signature in (s.partition(",") for s in headers.get("webhook-signature", "").split())
    )


def verify_by_library(secret: str, headers, body: bytes) -> bool:
    """What a receiver using the scheme's reference library would conclude."""
    try:
        Webhook(secret).verify(body, headers)
    except WebhookVerificationError:
        return False
    return True


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    verified: bool  # by the documented algorithm, written out above
    verified_by_library: bool  # by the Standard Webhooks reference library (standardwebhooks)
    answered: int | str | tuple


class Receiver:
    def __init__(self):
        self.secrets: dict[str, str] = {}
        self.scripts: dict[str, deque] = defaultdict(deque)
        self.received: list[Received] = []
        self.release = threading.Event()
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with receiver._lock:
                    script = receiver.scripts[self.path]
                    answer = script.popleft() if script else 200
                    secret = receiver.secrets.get(self.path, "")
                    receiver.received.append(
                        Received(
                            self.path,
                            headers,
                            body,
                            verify(secret, headers, body),
                            verify_by_library(secret, headers, body),
                            answer,
                        )
                    )
                if answer == HANG:
                    receiver.release.wait(30)
                    return
                extra: dict[str, str] = {}
                if isinstance(answer, tuple):  # (status, body) or (status, body, headers)
                    answer, payload, *more = answer
                    extra = more[0] if more else {}
                else:
                    payload = f"answer {answer} ".encode() + b"x" * 2000  # longer than the log keeps
                self.send_response(answer)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        class Server(ThreadingHTTPServer):
            def verify_request(self, request, client_address):
                with receiver._lock:
                    receiver.connections += 1  # every connection accepted, whether it sends or not
                return True

        self.connections = 0
        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.server.server_address[1]}{path}"

    def expect(self, path: str, secret: str, *answers) -> None:
        """Requests to ``path`` are signed with ``secret``; the next ones get ``answers`` (then
        200)."""
        self.secrets[path] = secret
        self.scripts[path].extend(answers)

    def at(self, path: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.path == path]

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
