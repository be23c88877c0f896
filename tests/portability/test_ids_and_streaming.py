"""Ids of imported history, and reading files in bounded memory."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

from comments import paths
from comments.ids import id_floor_at
from comments.models import Comment
from portability.formats import Comment as CommentRecord
from portability.formats.disqus import DisqusReader
from portability.formats.wordpress import WordPressReader
from portability.ids import HISTORY_END, history_id

from ..factories import CommentFactory, SiteFactory, SubjectFactory
from .conftest import fixture_path, run_import


def test_history_ids_follow_dates_and_sort_before_anything_the_service_made():
    moments = [
        datetime(1999, 12, 31, tzinfo=UTC),
        datetime(2012, 5, 1, tzinfo=UTC),
        datetime(2012, 5, 1, 0, 0, 1, tzinfo=UTC),
        datetime(2024, 12, 31, tzinfo=UTC),
        datetime(2025, 6, 1, tzinfo=UTC),
        HISTORY_END - timedelta(milliseconds=40),
        HISTORY_END,
        HISTORY_END + timedelta(days=1),
    ]
    ids = [history_id(m) for m in moments]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)
    assert history_id(HISTORY_END + timedelta(days=1)) == id_floor_at(HISTORY_END + timedelta(days=1))  # a true id
    assert all(i < id_floor_at(HISTORY_END) for i in ids[:-2])


def test_imported_comments_sort_before_the_sites_own_and_skip_ids_taken(db):
    site = SiteFactory(key="blog")
    subject = SubjectFactory(site=site, key="post-hello")
    native = CommentFactory(subject=subject, body="written here, today")
    assert native.pk > id_floor_at(HISTORY_END)
    first_candidate = history_id(datetime(2019, 3, 1, 10, tzinfo=UTC))
    # An id the first imported comment would take is already used (another site's history).
    elsewhere = SubjectFactory(site=SiteFactory())
    Comment.objects.create(
        id=first_candidate,
        subject=elsewhere,
        path=paths.encode_step(first_candidate),
        floor=1,
        created_at=datetime(2019, 3, 1, 10, tzinfo=UTC),
    )
    run_import(site, "disqus", fixture_path("disqus.xml"))
    imported = list(Comment.objects.filter(subject=subject).exclude(pk=native.pk).order_by("pk"))
    assert imported[0].pk == first_candidate + 1
    assert all(c.pk < native.pk for c in imported)
    assert [c.floor for c in imported if c.depth == 0] == [2, 3, 4]  # after the site's own first floor


def _disqus_posts(path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write('<disqus xmlns="http://disqus.com" xmlns:dsq="http://disqus.com/disqus-internals">\n')
        out.write('<thread dsq:id="1"><id>t</id><link>https://x.example/</link></thread>\n')
        for i in range(n):
            out.write(
                f'<post dsq:id="{i}"><message><![CDATA[<p>message {i} {"x" * 200}</p>]]></message>'
                f"<createdAt>2020-01-01T00:00:00Z</createdAt><isDeleted>false</isDeleted><isSpam>false</isSpam>"
                f'<author><name>n{i}</name><isAnonymous>true</isAnonymous></author><thread dsq:id="1"/></post>\n'
            )
        out.write("</disqus>\n")


def _wordpress_comments(path, n: int) -> None:
    with open(path, "w", encoding="utf-8") as out:
        out.write(
            '<rss xmlns:wp="http://wordpress.org/export/1.2/"><channel><item><title>t</title>'
            "<link>https://x.example/p/</link><wp:post_id>1</wp:post_id>\n"
        )
        for i in range(n):
            out.write(
                f"<wp:comment><wp:comment_id>{i}</wp:comment_id><wp:comment_author>n{i}</wp:comment_author>"
                f"<wp:comment_date_gmt>2020-01-01 00:00:00</wp:comment_date_gmt>"
                f"<wp:comment_content>{'y' * 200} {i}</wp:comment_content><wp:comment_approved>1</wp:comment_approved>"
                "<wp:comment_parent>0</wp:comment_parent></wp:comment>\n"
            )
        out.write("</item></channel></rss>\n")


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _growth_while_reading(reader) -> tuple[int, int]:
    """(comments, most the process's resident memory grew) while reading every record and
    keeping none. Resident memory, because lxml's trees live in C memory Python does not see."""
    start, most, count = _resident(), 0, 0
    for record in reader.records():
        if isinstance(record, CommentRecord):
            count += 1
            if count % 1000 == 0:
                most = max(most, _resident() - start)
    return count, most


def test_readers_hold_one_record_at_a_time_whatever_the_file_size(tmp_path):
    """The XML readers free each element once read: memory does not grow with the file (a
    WordPress post with 50,000 comments included). Kept whole, the 50,000 elements would take
    over 50 MB."""
    for write, reader_class in ((_disqus_posts, DisqusReader), (_wordpress_comments, WordPressReader)):
        path = tmp_path / f"{reader_class.name}.xml"
        write(path, 50_000)
        count, growth = _growth_while_reading(reader_class(str(path)))
        assert count == 50_000
        assert growth < 8 * 1024 * 1024, (reader_class.__name__, growth)
