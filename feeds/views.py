"""RSS 2.0 and Atom 1.0 feeds of comments (``django.contrib.syndication``), per site and per
subject, over ``queries.site_feed`` / ``subject_feed``: what an anonymous reader may see. Each
answer carries an ``ETag`` (of everything shown), ``Last-Modified`` (the newest post or edit) and
``Cache-Control``; a conditional GET that matches is answered ``304`` before anything is
rendered."""

from __future__ import annotations

from django.conf import settings
from django.contrib.syndication.views import Feed
from django.http import Http404
from django.urls import reverse
from django.utils.cache import get_conditional_response, patch_cache_control
from django.utils.feedgenerator import Atom1Feed, Rss201rev2Feed, SyndicationFeed
from django.utils.http import http_date

from comments.exceptions import NotFound

from . import queries


class CommentFeed(Feed):
    """One of the four feeds: ``listing`` reads what it shows, ``feed_type`` is its format."""

    feed_type: type[SyndicationFeed] = Rss201rev2Feed

    def listing(self, **kwargs) -> queries.FeedListing:
        raise NotImplementedError

    def __call__(self, request, **kwargs):
        try:
            listing = self.listing(**kwargs)
        except NotFound as exc:
            raise Http404(exc.message) from None
        etag, modified = listing.etag(self.feed_type.__name__), int(listing.last_modified.timestamp())
        response = get_conditional_response(request, etag=etag, last_modified=modified)
        if response is None:
            response = super().__call__(request, shown=_Shown(listing, request))
        response.headers["ETag"] = etag
        response.headers["Last-Modified"] = http_date(modified)
        patch_cache_control(response, public=True, max_age=settings.FEEDS_MAX_AGE)
        return response

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
        subject = shown.listing.subject
        return subject.url if subject is not None and subject.url else shown.feed_url

    def description(self, shown):
        return self.title(shown)

    def feed_url(self, shown):
        return shown.feed_url

    def item_title(self, entry):
        # Plain text: the generators escape it once, as the formats want (no double escape).
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

    def __init__(self, listing: queries.FeedListing, request):
        self.listing = listing
        self.feed_url = request.build_absolute_uri(request.path)
        self.entries = [{**e, "link": _entry_link(e, request)} for e in listing.entries]


def _entry_link(entry: dict, request) -> str:
    """The comment on its subject's page, else (no page known) the comment in the API."""
    if entry["subject"]["url"]:
        return f"{entry['subject']['url']}#comment-{entry['id']}"
    return request.build_absolute_uri(reverse("comment-detail", args=[entry["id"]]))


class SiteFeed(CommentFeed):
    def listing(self, *, site_key: str):  # type: ignore[override]  # the URL's keyword arguments
        return queries.site_feed(site_key)


class SubjectFeed(CommentFeed):
    def listing(self, *, subject_id: int):  # type: ignore[override]  # the URL's keyword arguments
        return queries.subject_feed(subject_id)


class SiteAtomFeed(SiteFeed):
    feed_type = Atom1Feed
    subtitle = CommentFeed.description


class SubjectAtomFeed(SubjectFeed):
    feed_type = Atom1Feed
    subtitle = CommentFeed.description
