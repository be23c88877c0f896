"""WordPress's export (WXR: an RSS document with ``wp:`` elements, any of its 1.0-1.2 versions).

Each ``<item>`` (post, page, ...) that has comments becomes a thread, known by its
``wp:post_id``, at its permalink (its subject is keyed by the permalink's path unless the
import says otherwise: the post id is no page's key). A ``wp:comment`` is known by its
``wp:comment_id`` and answers ``wp:comment_parent`` (0: none). ``wp:comment_approved``: 1 ->
published, 0 -> pending, spam -> rejected, trash (and post-trashed) -> deleted. Pingbacks and
trackbacks are not comments and are skipped. Registered users (``wp:comment_user_id`` > 0) are
``wordpress:user:<id>``; the others are guests. ``wp:comment_content`` is HTML whose line
breaks count, as WordPress shows it.
"""

from __future__ import annotations

from collections.abc import Iterator

from comments.models import Status

from .records import (
    HTML_LINES,
    MAX_BODY,
    Author,
    Comment,
    Reader,
    Record,
    Skipped,
    Thread,
    author_name,
    clean_ip,
    clean_text,
    fit_id,
    parse_time,
)
from .xmlstream import elements, namespace, release

STATUSES = {
    "1": Status.PUBLISHED,
    "approve": Status.PUBLISHED,
    "0": Status.PENDING,
    "hold": Status.PENDING,
    "spam": Status.REJECTED,
    "trash": Status.DELETED,
    "post-trashed": Status.DELETED,
}


class WordPressReader(Reader):
    name = "wordpress"
    identifier_is_key = False  # a post id, not what a page names its discussion by

    def records(self) -> Iterator[Record]:
        comments_in_item = 0
        for elem in elements(self.path, root="rss", tags=("item", "{*}comment"), label="WordPress export (WXR)"):
            if elem.tag == "item":
                if comments_in_item:
                    thread = self._thread(elem)
                    if thread is not None:
                        yield thread
                comments_in_item = 0
                release(elem)
                continue
            item = elem.getparent()
            if item is None or item.tag != "item":
                continue
            comments_in_item += 1
            yield self._comment(elem, namespace(elem.tag), item)
            # Free the comment and the comments read before it; the item's own fields stay
            # until the item ends.
            elem.clear(keep_tail=False)  # type: ignore[call-arg]  # lxml >= 4.4 has it; lxml-stubs lag
            previous = elem.getprevious()
            while previous is not None and previous.tag == elem.tag:
                item.remove(previous)
                previous = elem.getprevious()

    def _post_id(self, item) -> str:
        for child in item:
            if isinstance(child.tag, str) and child.tag.endswith("}post_id"):
                return fit_id(clean_text(child.text).strip())
        return ""

    def _thread(self, item) -> Thread | None:
        post_id = self._post_id(item)
        if not post_id:
            return None  # its comments were reported
        link = clean_text(item.findtext("link")).strip()
        ns = next((namespace(c.tag) for c in item if isinstance(c.tag, str) and c.tag.endswith("}post_id")), "")
        return Thread(
            source_id=post_id,
            identifier=post_id,
            address=link,
            fallback=f"wordpress:{post_id}",
            title=clean_text(item.findtext("title")).strip()[:300],
            closed=(item.findtext(ns + "comment_status") or "").strip() == "closed",
            created_at=parse_time(item.findtext(ns + "post_date_gmt")) or parse_time(item.findtext(ns + "post_date")),
        )

    def _comment(self, elem, wp: str, item) -> Record:
        def text(name: str) -> str:
            return clean_text(elem.findtext(wp + name)).strip()

        source_id = fit_id(text("comment_id"))
        where = f"comment {source_id}" if source_id else f"comment at line {elem.sourceline}"
        if not source_id:
            return Skipped(where, "comment without an id")
        post_id = self._post_id(item)
        if not post_id:
            return Skipped(where, "no thread")
        if text("comment_type") in ("pingback", "trackback"):
            return Skipped(where, "pingback or trackback")
        status = STATUSES.get(text("comment_approved"))
        if status is None:
            return Skipped(where, "unknown status")
        created_at = parse_time(text("comment_date_gmt")) or parse_time(text("comment_date"))
        if created_at is None:
            return Skipped(where, "bad or missing date")
        body = clean_text(elem.findtext(wp + "comment_content"))
        if len(body) > MAX_BODY:
            return Skipped(where, "body too long")
        name, email = text("comment_author")[:100], text("comment_author_email")[:254]
        user_id = text("comment_user_id")
        author: Author | None
        if user_id and user_id != "0":
            author = Author(
                external_id=self.external_id(f"user:{user_id}"), name=author_name(name, f"user {user_id}"), email=email
            )
        else:
            author = self.guest(name, email)
        parent = text("comment_parent")
        return Comment(
            source_id=source_id,
            thread_id=post_id,
            parent_id=fit_id(parent) if parent and parent != "0" else None,
            author=author,
            body=body.strip(),
            markup=HTML_LINES,
            created_at=created_at,
            status=status,
            ip=clean_ip(text("comment_author_IP")),
            user_agent=text("comment_agent")[:512],
        )
