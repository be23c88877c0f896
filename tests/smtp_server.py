"""A real SMTP server on loopback for the tests that send email (aiosmtpd).

The ``smtp_server`` fixture starts one for a test, points Django's SMTP backend at it, and gives
the messages it received, parsed, as the test's ``smtp_server.messages``. Processes the test
starts itself (a Celery worker, gunicorn) reach it through ``smtp_server.url`` as their
``EMAIL_URL``. Test modules use the fixture by importing it: ``from ..smtp_server import
smtp_server``.
"""

from __future__ import annotations

import email
import email.policy
import threading
import time
from email.message import EmailMessage

import pytest
from aiosmtpd.controller import Controller

WAIT_SECONDS = 30.0


class _Collector:
    """aiosmtpd handler: keeps every accepted message with its envelope."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.envelopes: list[tuple[str, list[str]]] = []
        self.refuse_next = 0  # answer that many DATA commands with a temporary failure
        self._arrived = threading.Condition()

    async def handle_DATA(self, server, session, envelope):
        if self.refuse_next:
            self.refuse_next -= 1
            return "451 4.3.0 Try again later"
        message = email.message_from_bytes(envelope.original_content or envelope.content, policy=email.policy.default)
        with self._arrived:
            self.messages.append(message)
            self.envelopes.append((envelope.mail_from, list(envelope.rcpt_tos)))
            self._arrived.notify_all()
        return "250 OK"

    def wait_for(self, count: int, timeout: float = WAIT_SECONDS) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        with self._arrived:
            while len(self.messages) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"expected {count} messages, the SMTP server received {len(self.messages)}")
                self._arrived.wait(left)
            return list(self.messages)


class _LoopbackController(Controller):
    """Listens on a port the kernel picks (port 0), so parallel runs never collide; aiosmtpd's
    start-up check connects to ``self.port``, so it learns the real one first."""

    def _trigger_server(self):
        self.port = self.server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]  # an asyncio Server
        super()._trigger_server()


class SmtpServer:
    def __init__(self, controller: Controller, collector: _Collector) -> None:
        self.host = controller.hostname
        self.port = controller.port
        self.url = f"smtp://{self.host}:{self.port}"
        self._collector = collector

    @property
    def messages(self) -> list[EmailMessage]:
        return list(self._collector.messages)

    def recipients(self) -> list[list[str]]:
        return [rcpt for _, rcpt in self._collector.envelopes]

    def wait_for(self, count: int, timeout: float = WAIT_SECONDS) -> list[EmailMessage]:
        """The messages once at least ``count`` have arrived (a sending worker is asynchronous)."""
        return self._collector.wait_for(count, timeout)

    def refuse_next(self, count: int) -> None:
        """Answer the next ``count`` messages with ``451`` (a temporary failure) to test retries."""
        self._collector.refuse_next = count


@pytest.fixture
def smtp_server(settings):
    collector = _Collector()
    controller = _LoopbackController(collector, hostname="127.0.0.1", port=0)
    controller.start()
    try:
        server = SmtpServer(controller, collector)
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST = server.host
        settings.EMAIL_PORT = server.port
        settings.EMAIL_HOST_USER = ""
        settings.EMAIL_HOST_PASSWORD = ""
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        yield server
    finally:
        controller.stop()
