"""The controls of the XSS suite: pages of our own, not the service's, that do run payloads, to
prove that the hook counts every way a payload runs (so a surface with nothing counted is a
surface where nothing ran), that the DOM scan finds what would run on a click, and that the
corpus is live: written into a page unescaped, most of it runs by itself."""

from __future__ import annotations

from html import escape

from .corpus import PAYLOADS
from .harness import HOOK, Watch, numbers


def test_the_corpus_has_at_least_150_payloads_each_its_own():
    assert len(PAYLOADS) >= 150
    assert len({p.text for p in PAYLOADS}) == len(PAYLOADS)
    assert [p.number for p in PAYLOADS] == list(range(1, len(PAYLOADS) + 1))


def test_the_hook_counts_every_way_a_payload_runs(page, watch, host):
    other = host.page("/frame", "<script>__xss(8)</script>")
    url = host.page(
        "/control",
        "<script>__xss(1)</script><img src=x onerror=__xss(2)>"
        "<script>alert(3); confirm(4); prompt(5); print(6);</script>"
        "<iframe srcdoc='<script>__xss(7)</script>'></iframe>"
        # the same page on another origin (localhost, not 127.0.0.1): a cross-origin frame
        f"<iframe src='{other.replace('127.0.0.1', 'localhost')}'></iframe>"
        "<div onmouseover=__xss(9) style='position:fixed;inset:0'>hover</div>"
        "<a href=' jav&#x09;ascript:__xss(10)'>a link to click</a>",
    )
    page.goto(url)
    watch.check("control", page)
    assert sorted(watch.ran, key=lambda r: int(r[1])) == [
        ("__xss", "1", url),
        ("__xss", "2", url),
        ("alert", "3", url),
        ("confirm", "4", url),
        ("prompt", "5", url),
        ("print", "6", url),
        ("__xss", "7", "about:srcdoc"),
        ("__xss", "8", other.replace("127.0.0.1", "localhost")),
        ("__xss", "9", url),
    ]
    found = "\n".join(watch.findings)
    assert "has an event handler: onerror=" in found and "has an event handler: onmouseover=" in found
    assert "has srcdoc=" in found and "a frame or plug-in in the page" in found
    assert 'links to javascript: " jav\\tascript:__xss(10)"' in found
    assert "ran in" in found  # what ran is a finding too: the suite would fail here


def test_a_dialog_that_escapes_the_hook_is_counted(browser):
    """Were the hook not installed in some document, its dialogs are still counted."""
    bare = browser.new_context()
    try:
        watch = Watch()
        page = watch.watch(bare.new_page())
        page.set_content("<script>alert('native')</script>")
        page.wait_for_timeout(100)
        assert [(how, what) for how, what, _ in watch.ran] == [("native alert", "native")]
    finally:
        bare.close()


def test_the_corpus_runs_when_written_into_a_page_unescaped(page, watch):
    """Each payload written raw into a document of its own, in the contexts the service's
    pages put text in (title, attribute, text, a link's address, a field's text): most run by
    themselves, and nearly all the rest are found by the scan. A corpus that ran nowhere here
    would prove nothing elsewhere."""
    documents = []
    for p in PAYLOADS:
        raw = p.text
        documents.append(
            f"<title>{raw}</title><textarea>{raw}</textarea><div title='{raw}' data-x=\"{raw}\">{raw}</div>"
            f'<a href="{raw}">x</a><p>{raw}</p>'
        )
    page.set_content("".join(f'<iframe srcdoc="{escape(d, quote=True)}"></iframe>' for d in documents))
    page.wait_for_timeout(500)
    watch.check("unescaped corpus", page, ours=True, scroll_frames=False)
    ran = numbers(watch.ran)
    assert HOOK  # the hook the pages got
    assert len(ran) >= 90, f"only {len(ran)} of {len(PAYLOADS)} payloads ran"
