"""The notification email sender, measured: one comment in a subject with ``--readers`` followers
(5,000), each wanting an email at once, fanned out, then ``mail.emails_send`` (the body of the
beat task ``notifications.send_emails``) run until nothing is queued, against a real SMTP server
on loopback (aiosmtpd, as the tests use) that accepts every message. Prints messages a second,
the statements per batch, and that a second run sends nothing.

    DJANGO_SECRET_KEY=bench DATABASE_URL=postgres://postgres@127.0.0.1:5432/<database> \\
    REDIS_URL=redis://127.0.0.1:6379/<db> .venv/bin/python -m bench.notification_emails

The readers are the fan-out benchmark's (``bench.notifications.seed``); the notifications of its
subject are emptied first, so do not run both on one database at the same time.
"""

from __future__ import annotations

import argparse
import os
import time

from bench.core import calibrate, configure


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--readers", type=int, default=5000, help="followers of the subject, one email each (5,000)")
    parser.add_argument("--allow-sqlite", action="store_true")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    configure(args)
    from aiosmtpd.controller import Controller
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from bench.notifications import drain, empty_last_run, seed
    from comments.services import comment_create
    from notifications import mail
    from notifications.models import EmailState, Notification

    class Accept:
        received = 0

        async def handle_DATA(self, server, session, envelope):
            Accept.received += 1
            return "250 OK"

    call_command("migrate", verbosity=0)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    speed = calibrate()
    print(f"bench: seeding {args.readers:,} followers", flush=True)
    _, subject, poster = seed(args.readers)
    empty_last_run(subject)
    comment_create(subject=subject, author=poster, body=f"News for everyone ({time.time():.0f}).")
    drain()
    queued = Notification.objects.filter(subject=subject, email=EmailState.QUEUED).count()

    controller = Controller(Accept(), hostname="127.0.0.1", port=8025 + os.getpid() % 1000)
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = controller.hostname, controller.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    try:
        with CaptureQueriesContext(connection) as one_batch:
            first = mail.emails_send(max_seconds=0.001)  # one batch only
        started, cpu = time.perf_counter(), time.process_time()
        sent = first
        while True:
            done = mail.emails_send()
            sent += done
            if not done:
                break
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        again = mail.emails_send()
    finally:
        controller.stop()
    left = Notification.objects.filter(subject=subject, email__in=[EmailState.QUEUED, EmailState.SENDING]).count()
    print(f"load average at the start {load}; Python speed check {speed:.0f} ms")
    print(
        f"{queued:,} emails queued by the fan-out; {sent:,} sent, {Accept.received:,} received by the SMTP server, {left} left"
    )
    print(f"one batch of {mail.EMAIL_BATCH}: {len(one_batch.captured_queries)} statements ({first} emails)")
    print(
        f"the rest: {sent - first:,} emails in {wall:.1f} s = {(sent - first) / wall:,.0f} emails/s "
        f"(this process's CPU {cpu:.1f} s)"
    )
    print(f"a second run sent {again}")
    return 0 if sent == queued == Accept.received and again == 0 and left == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
