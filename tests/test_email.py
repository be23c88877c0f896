"""Email settings from EMAIL_URL, and a message through a real SMTP server."""

from pathlib import Path

import pytest
from django.core import mail
from django.core.exceptions import ImproperlyConfigured

from config.env import email_from_url

from .smtp_server import smtp_server  # noqa: F401  (fixture)


def test_without_a_url_messages_are_files_under_var(tmp_path):
    assert email_from_url(None, tmp_path) == {
        "EMAIL_BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "EMAIL_FILE_PATH": str(tmp_path / "mail"),
    }
    assert not (tmp_path / "mail").exists()  # nothing is created by reading the settings


def test_smtp_urls():
    assert email_from_url("smtp://mailer:p%40ss@mail.example.com:587?tls=1", Path("/x")) == {
        "EMAIL_BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "EMAIL_HOST": "mail.example.com",
        "EMAIL_PORT": 587,
        "EMAIL_HOST_USER": "mailer",
        "EMAIL_HOST_PASSWORD": "p@ss",
        "EMAIL_USE_SSL": False,
        "EMAIL_USE_TLS": True,
        "EMAIL_TIMEOUT": 10.0,
    }
    smtps = email_from_url("smtps://mail.example.com", Path("/x"))
    assert (smtps["EMAIL_PORT"], smtps["EMAIL_USE_SSL"], smtps["EMAIL_USE_TLS"]) == (465, True, False)
    assert email_from_url("console:", Path("/x")) == {"EMAIL_BACKEND": "django.core.mail.backends.console.EmailBackend"}


@pytest.mark.parametrize("url", ["http://mail.example.com", "smtp://", "smtp:///nohost"])
def test_bad_urls_are_configuration_errors(url):
    with pytest.raises(ImproperlyConfigured):
        email_from_url(url, Path("/x"))


def test_a_message_reaches_the_smtp_server(smtp_server):
    sent = mail.send_mail("Hello", "Plain body", "from@example.com", ["reader@example.com"])
    assert sent == 1
    (message,) = smtp_server.wait_for(1)
    assert message["Subject"] == "Hello"
    assert message["To"] == "reader@example.com"
    assert message.get_content().strip() == "Plain body"
    assert smtp_server.recipients() == [["reader@example.com"]]
