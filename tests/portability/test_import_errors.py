"""Bad input gets a clear error and imports nothing: a malformed file, the wrong format, an
unknown format or site, a missing file. Never a traceback."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError, OutputWrapper

from comments.models import Comment, Subject
from portability.models import ImportRun, RunState, StagedRecord

from ..factories import SiteFactory
from .conftest import fixture_path


def import_command(*args) -> str:
    out = io.StringIO()
    call_command("import_comments", *args, stdout=out)
    return out.getvalue()


def test_the_command_prints_progress_and_a_summary(db):
    SiteFactory(key="blog")
    out = import_command("--site", "blog", "--format", "disqus", fixture_path("disqus.xml"))
    assert "reading: 18 of 18 records" in out and "importing: 9 of 9 comments" in out
    assert "comments imported: 9" in out and "1 bad or missing date (e.g. post 3001)" in out


def test_the_progress_rate_counts_from_the_start_of_its_phase():
    """The import says when a phase starts (done 0): the first line's rate is over the time
    since then, not over the instant between two calls."""
    from portability.management.commands import import_comments

    clock = iter([100.0, 104.0, 110.0, 111.0])
    out = io.StringIO()
    # The line's own clock: patching time.monotonic would stop every other clock of the process.
    progress = import_comments._ProgressLine(OutputWrapper(out), clock=lambda: next(clock))  # as the command's stdout
    progress("reading", 0, None)  # t = 100: the phase starts; nothing to say yet
    progress("reading", 8_000, None)  # t = 104
    progress("importing", 0, 3_000)  # t = 110
    progress("importing", 3_000, 3_000)  # t = 111: finished, shown at once
    assert out.getvalue().splitlines() == [
        "reading: 8,000 records (2,000/s)",
        "importing: 3,000 of 3,000 comments (3,000/s)",
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("<disqus><post dsq:id=1></disqus>", "not well-formed XML"),
        ('<?xml version="1.0"?>\n<disqus xmlns="http://disqus.com"><thread>', "not well-formed XML"),
        ("<rss><channel/></rss>", "this is not a Disqus export: its root element is <rss>, not <disqus>"),
        ("just some text", "this is not a Disqus export: no XML element found"),
        ("", "this is not a Disqus export: no XML element found"),
    ],
)
def test_a_file_that_is_not_a_readable_disqus_export_imports_nothing(db, tmp_path, content, message):
    SiteFactory(key="blog")
    bad = tmp_path / "bad.xml"
    bad.write_text(content)
    with pytest.raises(CommandError, match="nothing imported: .*" + message.replace("(", r"\(")):
        import_command("--site", "blog", "--format", "disqus", str(bad))
    assert not Subject.objects.exists() and not Comment.objects.exists()
    assert not StagedRecord.objects.exists()
    assert ImportRun.objects.get().state == RunState.FAILED


def test_a_truncated_export_imports_nothing(db, tmp_path):
    """The file is read whole before anything is inserted: a cut-off download is refused, not
    half imported."""
    SiteFactory(key="blog")
    cut = tmp_path / "cut.xml"
    cut.write_bytes(Path(fixture_path("disqus.xml")).read_bytes()[:5000])
    with pytest.raises(CommandError, match="not well-formed XML"):
        import_command("--site", "blog", "--format", "disqus", str(cut))
    assert not Comment.objects.exists()


@pytest.mark.parametrize(
    ("format", "fixture", "message"),
    [
        ("wordpress", "disqus.xml", "this is not a WordPress export \\(WXR\\): its root element is <disqus>"),
        ("remark42", "disqus.xml", "this is not a Remark42 backup"),
        ("json", "remark42.jsonl", "this is not this service's export"),
        ("isso", "disqus.xml", "this is not a readable Isso database"),
    ],
)
def test_a_file_of_another_format_is_refused_with_a_clear_message(db, format, fixture, message):
    SiteFactory(key="blog")
    with pytest.raises(CommandError, match=message):
        import_command("--site", "blog", "--format", format, fixture_path(fixture))
    assert not Comment.objects.exists()


def test_unknown_format_site_and_file_are_clear_errors(db):
    SiteFactory(key="blog")
    with pytest.raises(CommandError, match="unknown format 'livefyre'"):
        import_command("--site", "blog", "--format", "livefyre", fixture_path("disqus.xml"))
    with pytest.raises(CommandError, match="unknown site 'nope'"):
        import_command("--site", "nope", "--format", "disqus", fixture_path("disqus.xml"))
    with pytest.raises(CommandError, match=r"cannot open /no/such/file\.xml"):
        import_command("--site", "blog", "--format", "disqus", "/no/such/file.xml")


def test_manage_py_reports_bad_input_without_a_traceback():
    """What an operator sees: one line saying what is wrong."""
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "manage.py", "import_comments", "--site", "blog", "--format", "livefyre", "export.xml"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert (
        result.stderr.strip()
        == "CommandError: unknown format 'livefyre': use one of disqus, wordpress, isso, remark42, json"
    )
