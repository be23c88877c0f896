"""The XSS corpus where the service's words leave its own pages, in Chromium: the notification
emails (their HTML part, as a mail program shows it), the RSS and Atom feeds (read as a feed
reader reads them: each text the format says is HTML rendered as HTML) and the "latest
comments" sidebar on a host's page (``static/comments/latest.js``). Every payload is a guest's
name and comment on a page that a host made with the payload as its title and (in an http URL)
its address; two readers follow every page, one emailed at once, one in a daily digest.
Nothing may run, and no link may lead to ``javascript:`` (``harness.Watch``)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from html import escape

import pytest
from django.test import Client
from playwright.sync_api import expect
from rest_framework.test import APIClient

from accounts.guests import form_token_issue, guest_comment_post
from comments import services
from comments.models import Subject
from notifications import jobs, mail
from notifications.services import preferences_update, subscription_set
from tests.factories import SiteFactory, UserFactory

from . import inputs
from .corpus import PAYLOADS

pytestmark = pytest.mark.django_db(transaction=True)

PER_SITE = 20  # what one sidebar shows at most
# What XML 1.0 has no place for: the feeds drop them from what they write
# (test_a_control_character_breaks_no_feed, below), and an export file cannot carry them
# (test_xss_imports leaves them out of its files).
CONTROLS = dict.fromkeys([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])


@pytest.fixture
def followed(live_server, host, settings, mailoutbox):
    """Each payload's page on one of a dozen sites (each named by a payload), followed by Ada
    (emailed at once) and Bob (in the daily digest), with the payload's guest's comment on it."""
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0
    settings.NOTIFICATIONS_BASE_URL = "https://comments.example.com"
    settings.NOTIFICATIONS_EMAIL_HOURLY_LIMIT = 10 * len(PAYLOADS)  # each its own email, not a digest
    ada = UserFactory(username="ada", email="ada@example.com")
    bob = UserFactory(username="bob", email="bob@example.com")
    preferences_update(user=bob, email={"subscription": "daily"})
    api = APIClient()
    keys = [f"xss-{n}" for n in range(math.ceil(len(PAYLOADS) / PER_SITE))]
    sites = {
        key: SiteFactory(
            key=key,
            name=PAYLOADS[index].name,
            allowed_origins=[host.origin],
            signin_guests=True,
            guest_moderation="post",
        )
        for index, key in enumerate(keys)
    }
    token, _ = services.token_issue(user=ada)
    for p in PAYLOADS:
        site = keys[(p.number - 1) // PER_SITE]
        title = p.title
        subject = inputs.subject_create(api, token=token, site=site, key=p.key, title=title, url=p.url)
        subscription_set(user=ada, subject_id=subject, state="subscribed")
        subscription_set(user=bob, subject_id=subject, state="subscribed")
        guest_comment_post(
            site=sites[site],
            key=p.key,
            body=p.text,
            name=p.name,
            form_token=form_token_issue(site=sites[site]).token,
        )
    jobs.events_drain()  # the fan-out, as its beat task runs it (nothing waits without Redis)
    return keys


def test_no_payload_runs_in_the_emails_the_feeds_or_the_sidebar(page, watch, host, live_server, followed, mailoutbox):
    emails(page, watch, mailoutbox)
    feeds(page, watch, followed)
    sidebar(page, watch, host, live_server, followed)
    watch.assert_clean()


def emails(page, watch, mailoutbox) -> None:
    assert mail.emails_send() == len(PAYLOADS)
    assert mail.digests_send() == 1
    messages: dict[str, list[str]] = {message.to[0]: [] for message in mailoutbox}
    for message in mailoutbox:
        ((html, kind),) = message.alternatives
        assert kind == "text/html"
        messages[message.to[0]].append(html)
    assert len(messages["ada@example.com"]) == len(PAYLOADS) and len(messages["bob@example.com"]) == 1
    # As a mail program shows them: each message a document of its own.
    for to, htmls in messages.items():
        page.set_content("".join(f'<iframe srcdoc="{escape(html, quote=True)}"></iframe>' for html in htmls))
        page.wait_for_function(
            f"() => [...document.querySelectorAll('iframe')].filter((f) => f.contentDocument?.readyState === 'complete').length === {len(htmls)}"
        )
        watch.check(f"emails to {to}", page, ours=True)


def _text(element: ET.Element | None) -> str:
    return "" if element is None else "".join(element.itertext())


def _atom_text(element: ET.Element | None) -> str:
    """An Atom text construct as HTML, as its ``type`` says: text is escaped, html is HTML,
    xhtml is the markup inside."""
    if element is None:
        return ""
    kind = element.get("type", "text")
    if kind == "xhtml":
        return "".join(ET.tostring(child, encoding="unicode") for child in element)
    return element.text or "" if kind == "html" else escape(element.text or "")


ATOM = "{http://www.w3.org/2005/Atom}"
DC = "{http://purl.org/dc/elements/1.1/}"


def as_a_reader_shows(xml: bytes) -> str:
    """A feed as a reader's page: the channel's title, description and link, then each item's
    title, author, description and link. RSS has no types: readers take its texts for HTML."""
    root = ET.fromstring(xml)
    link = lambda href: f'<a href="{escape(href or "", quote=True)}">open</a>'  # noqa: E731
    if root.tag == "rss":
        channel = root.find("channel")
        assert channel is not None
        parts = [f"<h1>{_text(channel.find('title'))}</h1><p>{_text(channel.find('description'))}</p>"]
        parts.append(link(_text(channel.find("link"))))
        for item in channel.findall("item"):
            parts.append(
                f"<article><h2>{_text(item.find('title'))}</h2><p>{_text(item.find(DC + 'creator'))}"
                f"{_text(item.find('author'))}</p><div>{_text(item.find('description'))}</div>"
                f"{link(_text(item.find('link')))}</article>"
            )
        return "".join(parts)
    assert root.tag == ATOM + "feed"
    parts = [f"<h1>{_atom_text(root.find(ATOM + 'title'))}</h1><p>{_atom_text(root.find(ATOM + 'subtitle'))}</p>"]
    parts += [link(a.get("href")) for a in root.findall(ATOM + "link")]
    for entry in root.findall(ATOM + "entry"):
        author = escape(_text(entry.find(f"{ATOM}author/{ATOM}name")))
        body = _atom_text(entry.find(ATOM + "content")) or _atom_text(entry.find(ATOM + "summary"))
        parts.append(
            f"<article><h2>{_atom_text(entry.find(ATOM + 'title'))}</h2><p>{author}</p><div>{body}</div>"
            + "".join(link(a.get("href")) for a in entry.findall(ATOM + "link"))
            + "</article>"
        )
    return "".join(parts)


def feeds(page, watch, followed) -> None:
    """Every site's feeds and every page's, in both formats."""
    client = Client()
    urls = [f"/feeds/sites/{key}/comments.{kind}" for key in followed for kind in ("rss", "atom")]
    subjects = Subject.objects.filter(site__key__in=followed).values_list("pk", flat=True)
    urls += [f"/feeds/subjects/{pk}/comments.{kind}" for pk in subjects for kind in ("rss", "atom")]
    for kind in ("rss", "atom"):
        shown = []
        for url in (u for u in urls if u.endswith(kind)):
            answer = client.get(url)
            assert answer.status_code == 200, (url, answer.content[:300])
            shown.append(f"<section>{as_a_reader_shows(answer.content)}</section>")
        page.set_content("".join(shown))
        expect(page.locator("article")).to_have_count(2 * len(PAYLOADS))  # each in its site's and its own
        watch.check(f"feeds ({kind}), as a reader shows them", page)


def sidebar(page, watch, host, live_server, followed) -> None:
    boxes = "".join(f'<div data-comments-latest data-site="{key}" data-limit="{PER_SITE}"></div>' for key in followed)
    page.goto(
        host.page("/sidebar", boxes + f"<script src='{live_server.url}/static/comments/latest.js' async></script>")
    )
    expect(page.locator(".comments-latest-item")).to_have_count(len(PAYLOADS))
    watch.check("latest comments sidebar", page)


@pytest.mark.parametrize("where", ["title", "body"])
@pytest.mark.parametrize("kind", ["rss", "atom"])
def test_a_control_character_breaks_no_feed(kind, where, settings):
    """A guest, who needs no account, starts a page's discussion with its title and first
    comment: a control character in either must not take the site's feeds down."""
    settings.ACCOUNTS_GUEST_FORM_MIN_SECONDS = 0
    site = SiteFactory(key="feeds", signin_guests=True, guest_moderation="post")
    texts = {"title": "A title", "body": "Hello", where: "A\x0cform feed"}
    token = form_token_issue(site=site).token
    guest_comment_post(site=site, key="k", name="Guest", form_token=token, title=texts["title"], body=texts["body"])
    assert Client().get(f"/feeds/sites/feeds/comments.{kind}").status_code == 200
