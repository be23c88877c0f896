"""RSS 2.0 and Atom 1.0 feeds of comments (``django.contrib.syndication``), per site and per
subject, over ``queries.site_feed`` / ``subject_feed``: what an anonymous reader may see. Each
answer carries an ``ETag`` (of everything shown), ``Last-Modified`` (the newest post or edit) and
``Cache-Control``; a conditional GET that matches is answered ``304`` before anything is
rendered.

What the feed classes give the generators is Atom's model: plain text everywhere (titles, the
description, authors' names) but an entry's description, which is the comment's sanitized
HTML. Atom says so in the XML (``Atom1Feed`` writes text constructs as text and the summary as
``type="html"``). RSS cannot: readers render its titles and descriptions (and often its authors)
as HTML, so ``HtmlRssFeed`` escapes each plain text for HTML before the XML writer escapes it
for XML. Links are http(s) only (``queries.web_url``), in both formats."""

from __future__ import annotations

from html import escape
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.syndication.views import Feed
from django.http import Http404
from django.urls import reverse
from django.utils.cache import get_conditional_response, patch_cache_control
from django.utils.feedgenerator import Atom1Feed, Rss201rev2Feed, SyndicationFeed
from django.utils.http import http_date

from comments.exceptions import NotFound

from . import queries

# What XML 1.0 cannot carry: the C0 controls but tab, line feed and carriage return, and two
# non-characters. A stored text may hold them (a guest's comment, an imported title), and the
# XML writer refuses them, which took a site's whole feed down for one comment (issue 33).
_NOT_XML = dict.fromkeys([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0xFFFE, 0xFFFF])


def _xml_text(value):
    if isinstance(value, str):
        return value.translate(_NOT_XML)
    if isinstance(value, (list, tuple)):
        return [_xml_text(v) for v in value]
    return value


class XmlTextFeed(SyndicationFeed):
    """A generator that drops from every text what XML cannot carry, before it writes it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.feed = {name: _xml_text(value) for name, value in self.feed.items()}

    def add_item(self, *args, **kwargs):
        super().add_item(*args, **kwargs)
        self.items[-1] = {name: _xml_text(value) for name, value in self.items[-1].items()}


class AtomFeed(XmlTextFeed, Atom1Feed):
    """Atom 1.0, its texts fit for XML (``XmlTextFeed``)."""


class HtmlRssFeed(XmlTextFeed, Rss201rev2Feed):
    """RSS 2.0 from text given as for Atom: every plain text that a reader renders as HTML is
    escaped for HTML here (``<b>`` becomes ``&lt;b&gt;``, then ``&amp;lt;b&amp;gt;`` in the XML),
    so a subject called ``<img onerror=…>`` or a commenter called ``<script>`` reads as those
    characters and runs nothing. An item's description is HTML already (sanitized), escaped
    once, by the XML writer."""

    FEED_TEXTS = ("title", "description", "subtitle", "author_name", "author_email", "feed_copyright")
    ITEM_TEXTS = ("title", "author_name", "author_email", "item_copyright")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _escape_texts(self.feed, self.FEED_TEXTS)

    def add_item(self, *args, **kwargs):
        super().add_item(*args, **kwargs)
        _escape_texts(self.items[-1], self.ITEM_TEXTS)


def _escape_texts(fields: dict, names: tuple[str, ...]) -> None:
    for name in names:
        if fields.get(name) is not None:
            fields[name] = escape(fields[name])
    if fields.get("categories"):
        fields["categories"] = [escape(c) for c in fields["categories"]]


class CommentFeed(Feed):
    """One of the four feeds: ``listing`` reads what it shows, ``feed_type`` is its format.
    Every text it gives is plain text but ``item_description`` (HTML): the generator writes
    each as its format needs (``HtmlRssFeed``, ``AtomFeed``)."""

    feed_type: type[SyndicationFeed] = HtmlRssFeed

    def listing(self, *, request, **kwargs) -> queries.FeedListing:
        raise NotImplementedError

    def __call__(self, request, **kwargs):
        try:
            listing = self.listing(request=request, **kwargs)
        except NotFound as exc:
            raise Http404(exc.message) from None
        etag, modified = listing.etag(self.feed_type.__name__), int(listing.last_modified.timestamp())
        response = get_conditional_response(request, etag=etag, last_modified=modified)
        if response is None:
            response = super().__call__(request, shown=_Shown(listing, request, self.own_path(request)))
        response.headers["ETag"] = etag
        response.headers["Last-Modified"] = http_date(modified)
        patch_cache_control(response, public=True, max_age=settings.FEEDS_MAX_AGE)
        return response

    def own_path(self, request) -> str:
        """The feed's own address (its self link): the path; a query string names no feed."""
        return request.path

    def get_object(self, request, shown):
        return shown

    def items(self, shown):
        return shown.entries

    def title(self, shown):
        subject, site = shown.listing.subject, shown.listing.site
        if subject is not None:
            return f"Comments on {subject.title or subject.key}"
        return f"Recent comments on {site.name or site.key}"

    def link(self, shown):
        return shown.listing.subject_url or shown.feed_url

    def description(self, shown):
        return self.title(shown)

    def feed_url(self, shown):
        return shown.feed_url

    def item_title(self, entry):
        # Plain text: the generator escapes it as its format wants (HtmlRssFeed, AtomFeed).
        who = self.item_author_name(entry) or "Someone"
        return f"{who} on {entry['subject']['title'] or entry['subject']['key']}"

    def item_description(self, entry):
        return entry["html"]  # sanitized HTML; the generators escape it into the XML

    def item_link(self, entry):
        return entry["link"]

    def item_guid(self, entry):
        return f"urn:comments:comment:{entry['id']}"

    item_guid_is_permalink = False

    def item_author_name(self, entry):
        author = entry["author"]
        if author is None:
            return None
        # A guest named like a member is not taken for them here either.
        return f"{author['name']} (guest)" if author.get("guest") else author["name"]

    def item_pubdate(self, entry):
        return entry["created_at"]

    def item_updateddate(self, entry):
        return entry["edited_at"] or entry["created_at"]


class _Shown:
    """A listing with what depends on the request (absolute URLs): the feed objects are shared
    by every request, so nothing of one is kept on them."""

    def __init__(self, listing: queries.FeedListing, request, path: str):
        self.listing = listing
        self.feed_url = request.build_absolute_uri(path)
        self.entries = [{**e, "link": _entry_link(e, request)} for e in listing.entries]


def _entry_link(entry: dict, request) -> str:
    """The comment on its subject's page, else (no page known, or not an http(s) one:
    ``queries.web_url``) the comment in the API."""
    if entry["subject"]["url"]:
        return f"{entry['subject']['url']}#comment-{entry['id']}"
    return request.build_absolute_uri(reverse("comment-detail", args=[entry["id"]]))


class SiteFeed(CommentFeed):
    """The site's comments; with ``?key=<a subject's key>``, that subject's, for a page that
    knows its key (the widget's ``data-key``) and not the subject's id."""

    def listing(self, *, request, site_key: str):  # type: ignore[override]  # the URL's keyword arguments
        key = request.GET.get("key")
        if key is not None:
            return queries.subject_feed_by_key(site_key=site_key, key=key)
        return queries.site_feed(site_key=site_key)

    def own_path(self, request) -> str:
        key = request.GET.get("key")
        return request.path if key is None else f"{request.path}?{urlencode({'key': key})}"


class SubjectFeed(CommentFeed):
    def listing(self, *, request, subject_id: int):  # type: ignore[override]  # the URL's keyword arguments
        return queries.subject_feed(subject_id=subject_id)


class SiteAtomFeed(SiteFeed):
    feed_type = AtomFeed
    subtitle = CommentFeed.description


class SubjectAtomFeed(SubjectFeed):
    feed_type = AtomFeed
    subtitle = CommentFeed.description
