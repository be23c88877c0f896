"""Disqus's XML export (``<disqus>``: ``<thread>`` elements, then ``<post>`` elements).

A thread is known by its ``dsq:id``; its ``<id>`` is the identifier the site gave Disqus (the
best subject key), its ``<link>`` the page. A post is known by its ``dsq:id``; it names its
thread and, for a reply, its ``<parent>``. Statuses: ``isSpam`` -> rejected, ``isDeleted`` ->
deleted (a placeholder where replies hang under it), ``isApproved`` false (an element this
service's own Disqus export writes for held comments) -> pending, else published. A thread
marked ``isDeleted`` is not imported, nor its posts. Authors with a Disqus account
(``isAnonymous`` false and a ``username``) are ``disqus:<username>``; the others are guests.
Messages are HTML (see ``portability.markup``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from comments.models import Status

from .records import (
    HTML,
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
from .xmlstream import elements, flag, namespace, release

DSQ_ID = "{http://disqus.com/disqus-internals}id"


class DisqusReader(Reader):
    name = "disqus"

    def records(self) -> Iterator[Record]:
        deleted_threads: set[str] = set()
        for elem in elements(self.path, root="disqus", tags=("{*}thread", "{*}post"), label="Disqus export"):
            parent = elem.getparent()
            if parent is None or parent.getparent() is not None:
                continue  # a post's <thread dsq:id="..."/> reference, read with its post
            ns = namespace(parent.tag)
            if elem.tag == ns + "thread":
                yield self._thread(elem, ns, deleted_threads)
            elif elem.tag == ns + "post":
                yield self._post(elem, ns, deleted_threads)
            release(elem)

    def _thread(self, elem, ns: str, deleted: set[str]) -> Record:
        source_id = clean_text(elem.get(DSQ_ID)).strip()
        if not source_id:
            return Skipped(f"thread at line {elem.sourceline}", "thread without an id")
        source_id = fit_id(source_id)
        if flag(elem.findtext(ns + "isDeleted")):
            deleted.add(source_id)
            return Skipped(f"thread {source_id}", "thread deleted in the source")
        identifier = clean_text(elem.findtext(ns + "id")).strip()
        link = clean_text(elem.findtext(ns + "link")).strip()
        return Thread(
            source_id=source_id,
            identifier=identifier,
            address=link,
            fallback=f"disqus:{source_id}",
            title=clean_text(elem.findtext(ns + "title")).strip()[:300],
            closed=bool(flag(elem.findtext(ns + "isClosed"))),
            created_at=parse_time(elem.findtext(ns + "createdAt")),
        )

    def _post(self, elem, ns: str, deleted_threads: set[str]) -> Record:
        source_id = clean_text(elem.get(DSQ_ID) or elem.findtext(ns + "id")).strip()
        where = f"post {source_id}" if source_id else f"post at line {elem.sourceline}"
        thread = elem.find(ns + "thread")
        thread_id = fit_id(clean_text(thread.get(DSQ_ID)).strip()) if thread is not None else ""
        if not thread_id:
            return Skipped(where, "no thread")
        if thread_id in deleted_threads:
            return Skipped(where, "thread deleted in the source")
        created_at = parse_time(elem.findtext(ns + "createdAt"))
        if created_at is None:
            return Skipped(where, "bad or missing date")
        deleted, spam = flag(elem.findtext(ns + "isDeleted")), flag(elem.findtext(ns + "isSpam"))
        approved = flag(elem.findtext(ns + "isApproved")) if elem.find(ns + "isApproved") is not None else True
        if deleted is None or spam is None or approved is None:
            return Skipped(where, "unreadable isDeleted, isSpam or isApproved")
        message = clean_text(elem.findtext(ns + "message")).strip()
        if len(message) > MAX_BODY:
            return Skipped(where, "body too long")
        author = self._author(elem.find(ns + "author"), ns)
        if not source_id:
            # No id at all: one made of what the post says, the same in every export of it.
            seed = "\n".join([thread_id, created_at.isoformat(), author.external_id if author else "", message])
            source_id = "sha256:" + hashlib.sha256(seed.encode()).hexdigest()
        parent = elem.find(ns + "parent")
        parent_id = clean_text(parent.get(DSQ_ID)).strip() if parent is not None else ""
        if spam:
            status = Status.REJECTED
        elif deleted:
            status = Status.DELETED
        elif not approved:
            status = Status.PENDING
        else:
            status = Status.PUBLISHED
        return Comment(
            source_id=fit_id(source_id),
            thread_id=thread_id,
            parent_id=fit_id(parent_id) if parent_id else None,
            author=author,
            body=message,
            markup=HTML,
            created_at=created_at,
            status=status,
            ip=clean_ip(elem.findtext(ns + "ipAddress")),
        )

    def _author(self, elem, ns: str):
        if elem is None:
            return None
        name = clean_text(elem.findtext(ns + "name")).strip()
        email = clean_text(elem.findtext(ns + "email")).strip()
        username = clean_text(elem.findtext(ns + "username")).strip()
        if username and not flag(elem.findtext(ns + "isAnonymous")):
            return Author(external_id=self.external_id(username), name=author_name(name, username), email=email[:254])
        return self.guest(name[:100], email[:254])
