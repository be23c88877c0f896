"""Imports land on the pages that read them: ``import_comments --map-url OLD=NEW --key-from
path|url|id --dry-run``, run as a person runs it, on the export files of every format; each
check ends where a reader does, at the widget's API asked for the page's default key."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.utils import timezone

from comments import services as comment_services
from comments.models import Comment, Subject
from moderation.models import AuditEntry
from portability import services
from portability.keys import page_key
from portability.models import ImportRun

from ..factories import SiteFactory, SubjectFactory, UserFactory
from .conftest import assert_consistent, counts, fixture_path, site_shape

MOVED = fixture_path("disqus-moved.xml")


def import_comments(*args: str) -> str:
    """``manage.py import_comments ARGS``; what it printed."""
    out = io.StringIO()
    call_command("import_comments", *args, stdout=out)
    return out.getvalue()


def widget_bodies(site_key: str, key: str) -> list[str]:
    """What the widget's API lists for the page whose key is ``key``: the subject by its key, then
    its comments, oldest first."""
    client = Client()
    found = client.get("/api/v1/subjects/lookup", {"site": site_key, "key": key})
    assert found.status_code == 200, (key, found.content)
    listed = client.get(f"/api/v1/subjects/{found.json()['id']}/comments", {"mode": "flat", "sort": "old"})
    assert listed.status_code == 200
    return [item["body"] for item in listed.json()["items"]]


def subjects(site) -> dict[str, tuple[str, str]]:
    """The site's subjects: key -> (URL, title)."""
    return {s.key: (s.url, s.title) for s in Subject.objects.filter(site=site)}


# --- a blog that moves its domain, its generator and a folder (fixtures/disqus-moved.xml) ------


def test_threads_without_an_identifier_are_keyed_by_their_path_as_the_widget_asks(db):
    site = SiteFactory(key="moved")
    import_comments(MOVED, "--site", "moved", "--format", "disqus")
    assert subjects(site) == {
        "https://old.example.com/2019/01/05/hello.html": (  # Jekyll's identifier: kept by default
            "https://old.example.com/2019/01/05/hello.html",
            "Hello from Jekyll",
        ),
        "/blog/2020/notes/": ("https://old.example.com/blog/2020/notes/?utm_source=feed", "Notes from Hugo"),
        "42 https://old.example.com/?p=42": ("https://old.example.com/about.html", "About"),
        "/2018/12/31/old-post.html": ("http://old.example.com/2018/12/31/old-post.html", "An old post"),
    }
    # The Hugo page, at its address with the query string a reader came with, asks for its path.
    key = page_key("https://old.example.com/blog/2020/notes/?utm_source=feed#comments")
    assert widget_bodies("moved", key) == ["A note on the Hugo notes."]
    assert_consistent(site)


def test_a_moved_domain_is_remapped_by_the_longest_prefix_and_by_exact_urls(db):
    site = SiteFactory(key="moved")
    printed = import_comments(
        MOVED,
        "--site=moved",
        "--format=disqus",
        "--key-from=path",
        "--map-url=https://old.example.com/=https://example.com/",
        "--map-url=https://old.example.com/blog/=https://example.com/posts/",  # more specific: wins
        "--map-url=http://old.example.com/=https://example.com/",  # the export's http:// links
        "--map-url=https://old.example.com/about.html=https://example.com/about/",  # one URL
    )
    assert "comments imported: 5" in printed
    assert subjects(site) == {
        "/2019/01/05/hello.html": ("https://example.com/2019/01/05/hello.html", "Hello from Jekyll"),
        "/posts/2020/notes/": ("https://example.com/posts/2020/notes/?utm_source=feed", "Notes from Hugo"),
        "/about/": ("https://example.com/about/", "About"),
        "/2018/12/31/old-post.html": ("https://example.com/2018/12/31/old-post.html", "An old post"),
    }
    for url, bodies in (
        ("https://example.com/2019/01/05/hello.html", ["Welcome to the Jekyll post.", "A reply on the Jekyll post."]),
        ("https://example.com/posts/2020/notes/", ["A note on the Hugo notes."]),
        ("https://example.com/about/", ["Nice about page."]),
        ("https://example.com/2018/12/31/old-post.html", ["Happy new year from the old post."]),
    ):
        assert widget_bodies("moved", page_key(url)) == bodies, url
    run = ImportRun.objects.get(site=site)
    assert run.options == {
        "map_url": [
            "https://old.example.com/=https://example.com/",
            "https://old.example.com/blog/=https://example.com/posts/",
            "http://old.example.com/=https://example.com/",
            "https://old.example.com/about.html=https://example.com/about/",
        ],
        "key_from": "path",
    }
    assert "--key-from path" in AuditEntry.objects.get(site=site, action="data_import").reason
    assert_consistent(site)


def test_key_from_url_and_id_key_subjects_by_the_whole_url_and_the_source_identifier(db):
    by_url, by_id = SiteFactory(key="by-url"), SiteFactory(key="by-id")
    remap = "--map-url=https://old.example.com/=https://example.com/"
    import_comments(MOVED, "--site=by-url", "--format=disqus", "--key-from=url", remap)
    import_comments(MOVED, "--site=by-id", "--format=disqus", "--key-from=id", remap)
    assert set(subjects(by_url)) == {
        "https://example.com/2019/01/05/hello.html",
        "https://example.com/blog/2020/notes/?utm_source=feed",
        "https://example.com/about.html",
        "http://old.example.com/2018/12/31/old-post.html",  # no rule for http://: as it was
    }
    assert set(subjects(by_id)) == {
        "https://old.example.com/2019/01/05/hello.html",  # the identifier, as the source has it
        "/blog/2020/notes/",  # no identifier: the path, as by default
        "42 https://old.example.com/?p=42",
        "/2018/12/31/old-post.html",
    }
    assert widget_bodies("by-id", "42 https://old.example.com/?p=42") == ["Nice about page."]


# --- the dry run -------------------------------------------------------------------------------


def _every_row_count() -> dict[str, int]:
    return {model._meta.label: model._default_manager.count() for model in apps.get_models() if model._meta.managed}


def test_a_dry_run_prints_where_each_thread_goes_and_writes_nothing(db):
    site = SiteFactory(key="moved")
    existing = SubjectFactory(site=site, key="/about/", title="About us", url="https://example.com/about/")
    before = _every_row_count()
    printed = import_comments(
        MOVED,
        "--site=moved",
        "--format=disqus",
        "--key-from=path",
        "--dry-run",
        "--map-url=https://old.example.com/=https://example.com/",
        "--map-url=https://old.example.com/about.html=https://example.com/about/",
    )
    assert _every_row_count() == before
    lines = printed.splitlines()
    assert lines[0] == "dry run: nothing written; site 'moved'"
    assert (
        "create: key '/2019/01/05/hello.html' url 'https://example.com/2019/01/05/hello.html' "
        "title 'Hello from Jekyll': 2 comments (thread 7001)"
    ) in lines
    assert "join: key '/about/' url 'https://example.com/about/' title 'About us': 1 comments (thread 7003)" in lines
    assert lines[-1].startswith("4 threads: 3 new subjects; 5 comments in them;")
    # ... and the import then does what the dry run said.
    import_comments(
        MOVED,
        "--site=moved",
        "--format=disqus",
        "--key-from=path",
        "--map-url=https://old.example.com/=https://example.com/",
        "--map-url=https://old.example.com/about.html=https://example.com/about/",
    )
    assert Comment.objects.filter(subject=existing).count() == 1
    again = import_comments(MOVED, "--site=moved", "--format=disqus", "--key-from=path", "--dry-run")
    assert "imported before: key '/2019/01/05/hello.html'" in again
    assert _every_row_count() != before


# --- importing again -------------------------------------------------------------------------


def test_importing_again_with_the_same_options_changes_nothing(db):
    site = SiteFactory(key="moved")
    flags = [
        "--site=moved",
        "--format=disqus",
        "--key-from=path",
        "--map-url=https://old.example.com/=https://example.com/",
    ]
    import_comments(MOVED, *flags)
    before = (site_shape(site), counts(site), subjects(site))
    printed = import_comments(MOVED, *flags)
    assert "comments imported: 0" in printed and "imported before under another key" not in printed
    assert (site_shape(site), counts(site), subjects(site)) == before


def test_importing_again_with_other_options_moves_nothing_and_says_which_threads_it_would_have(db):
    """A key is how a live page finds its discussion: a re-import never moves a subject made
    before, nor duplicates it under the new key; the summary names each thread concerned."""
    site = SiteFactory(key="moved")
    import_comments(MOVED, "--site=moved", "--format=disqus")
    before = (site_shape(site), counts(site), subjects(site))
    printed = import_comments(
        MOVED,
        "--site=moved",
        "--format=disqus",
        "--key-from=path",
        "--map-url=https://old.example.com/=https://example.com/",
    )
    assert (site_shape(site), counts(site), subjects(site)) == before
    assert "2 imported before under another key: left on its subject" in printed
    assert "thread 7001 on 'https://old.example.com/2019/01/05/hello.html', not '/2019/01/05/hello.html'" in printed
    assert "3 imported before with another URL: left as it was" in printed
    run = ImportRun.objects.latest("pk")
    assert run.summary["kept"]["imported before under another key: left on its subject"] == 2
    assert not run.summary["notes"]


# --- every format ------------------------------------------------------------------------------


def test_disqus_threads_with_an_identifier_keep_it_and_move_their_url(db):
    site = SiteFactory(key="blog")
    import_comments(
        fixture_path("disqus.xml"),
        "--site=blog",
        "--format=disqus",
        "--map-url=https://blog.example/=https://new.example/",
    )
    assert subjects(site) == {
        "post-hello": ("https://new.example/2019/hello/", "Hello, world"),
        "/2020/%E4%B8%AD%E6%96%87/": ("https://new.example/2020/中文/", "中文标题 — unicode"),
    }
    assert (
        len(widget_bodies("blog", page_key("https://new.example/2020/中文/")))
        == Comment.objects.filter(subject__key="/2020/%E4%B8%AD%E6%96%87/", status="published").count()
        > 0
    )


def test_wordpress_permalinks_move_and_key_by_path_or_post_id(db):
    site, by_id = SiteFactory(key="wp"), SiteFactory(key="wp-ids")
    remap = "--map-url=https://wp.example/=https://example.com/blog/"
    import_comments(fixture_path("wordpress.xml"), "--site=wp", "--format=wordpress", remap)
    assert subjects(site) == {
        "/blog/2018/01/hello-world/": ("https://example.com/blog/2018/01/hello-world/", "Hello world!"),
        "/blog/2019/second/": ("https://example.com/blog/2019/second/", "第二篇文章"),
    }
    listed = widget_bodies("wp", page_key("https://example.com/blog/2018/01/hello-world/"))
    assert listed[0].startswith("Hi, this is a comment.") and listed[1] == "Thanks! **Bold** *and* safe."
    import_comments(fixture_path("wordpress.xml"), "--site=wp-ids", "--format=wordpress", "--key-from=id", remap)
    assert set(subjects(by_id)) == {"1", "3"}  # the post ids, as <?php the_ID(); ?> writes them
    assert_consistent(site)


def test_remark42_pages_move_by_the_most_specific_prefix(db):
    site = SiteFactory(key="r42")
    import_comments(
        fixture_path("remark42.jsonl"),
        "--site=r42",
        "--format=remark42",
        "--map-url=https://r42.example/=https://example.com/",
        "--map-url=https://r42.example/post/=https://example.com/posts/",
    )
    assert subjects(site) == {
        "/posts/1/": ("https://example.com/posts/1/", "Post one"),
        "/closed/": ("https://example.com/closed/", subjects(site)["/closed/"][1]),
    }
    assert widget_bodies("r42", page_key("https://example.com/posts/1/"))
    assert_consistent(site)


def test_isso_uris_are_paths_already_and_stay_the_keys_whatever_the_options(db, isso_db):
    """Isso keeps each page's path (its client's default) or its data-isso-id, no URL: a remap
    has nothing to move, and ``--key-from url`` falls back to the path."""
    site = SiteFactory(key="isso")
    import_comments(
        isso_db,
        "--site=isso",
        "--format=isso",
        "--key-from=url",
        "--map-url=https://isso.example/=https://example.com/",
    )
    assert set(subjects(site)) == {"/posts/first/", "/posts/%E7%AC%AC%E4%BA%8C/", "/posts/quiet/"}
    assert all(url == "" for url, _ in subjects(site).values())
    assert widget_bodies("isso", page_key("https://example.com/posts/第二/"))


@pytest.fixture
def exported(db, tmp_path) -> Path:
    """This service's own export of a site with a keyed subject and one keyed by its path."""
    site = SiteFactory(key="source")
    author = UserFactory(username="writer")
    at = timezone.now() - timedelta(days=1)
    for key, url, body in (
        ("article:1", "https://source.example/articles/1/", "On the first article."),
        ("/notes/", "https://source.example/notes/", "On the notes."),
    ):
        subject = SubjectFactory(site=site, key=key, title=key, url=url)
        comment_services.comment_create(subject=subject, author=author, body=body, created_at=at)
    path = tmp_path / "export.jsonl"
    with open(path, "wb") as out:
        services.site_export(site=site, format="json", out=out)
    return path


def test_this_services_export_keeps_its_keys_and_moves_its_urls_or_keys_by_path(exported):
    kept, by_path = SiteFactory(key="kept"), SiteFactory(key="by-path")
    remap = "--map-url=https://source.example/=https://example.com/"
    import_comments(str(exported), "--site=kept", "--format=json", remap)
    import_comments(str(exported), "--site=by-path", "--format=json", "--key-from=path", remap)
    assert {k: u for k, (u, _) in subjects(kept).items()} == {
        "article:1": "https://example.com/articles/1/",
        "/notes/": "https://example.com/notes/",
    }
    assert set(subjects(by_path)) == {"/articles/1/", "/notes/"}
    assert widget_bodies("by-path", page_key("https://example.com/articles/1/")) == ["On the first article."]
    assert widget_bodies("kept", "article:1") == ["On the first article."]


# --- bad options -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--map-url=https://old.example.com/", "--map-url takes OLD=NEW"),
        ("--map-url=https://old.example.com/=ftp://example.com/", "must be an http:// or https:// URL"),
        ("--map-url=https://old.example.com/=/posts/", "must be an http:// or https:// URL"),
        ("--map-url=/blog/=https://example.com/", "the old address must be an http:// or https:// URL"),
        (
            "--map-url=https://old.example.com/blog/=https://example.com/post.html",
            "it maps to a prefix, end NEW with / too",
        ),
        ("--key-from=slug", "--key-from 'slug': use one of path, url, id"),
    ],
)
def test_bad_options_are_command_errors_and_import_nothing(db, flag, message):
    SiteFactory(key="moved")
    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        import_comments(MOVED, "--site=moved", "--format=disqus", flag)
    assert not Comment.objects.exists() and not ImportRun.objects.exists()


def test_a_bad_option_on_the_command_line_is_one_line_of_error_not_a_traceback():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings"}
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "import_comments",
            MOVED,
            "--site=moved",
            "--format=disqus",
            "--map-url=nonsense",
        ],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == "CommandError: --map-url takes OLD=NEW (two URLs joined by =): got 'nonsense'"
