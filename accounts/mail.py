"""The sign-in email, in the language the reader asked in (English or Simplified Chinese)."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import send_mail
from django.template.loader import render_to_string
from django.utils import translation

from comments.models import Site
from comments.names import one_line


def send_link_email(*, to: str, url: str, site: Site, lang: str) -> None:
    """Send the link; raises ``OSError`` (``smtplib.SMTPException`` among them) when the mail
    server refuses or cannot be reached."""
    context = {"url": url, "site_name": site.name, "minutes": max(1, settings.ACCOUNTS_EMAIL_LINK_TTL // 60)}
    with translation.override(lang):
        # One line: the site's name is in it, and a header with a line break is never sent.
        subject = one_line(render_to_string("accounts/email_link_subject.txt", context))
        body = render_to_string("accounts/email_link.txt", context)
    send_mail(subject, body, None, [to])
