"""``assert_seen_by_a_person``, the check every browser test makes before it clicks or types,
on small pages built to hide a field in each way a page can: it must pass the field a person
sees and fail each hidden one, naming why. The visually hidden style is the widget's own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser.conftest import assert_seen_by_a_person, type_into

WIDGET_CSS = Path(__file__).resolve().parents[2] / "static" / "comments" / "widget.css"
SR_ONLY = re.search(r"^\.sr-only \{[^}]*\}", WIDGET_CSS.read_text(), re.MULTILINE).group(0)
SECONDS = 0.5  # these pages do not change: no need to wait for them to settle


def open_page(page, body: str) -> None:
    page.set_content(f"<!doctype html><style>{SR_ONLY} textarea {{ width: 300px; height: 80px; }}</style>{body}")


@pytest.mark.parametrize(
    "body, why",
    [
        (
            '<label class="sr-only">Your reply<textarea id="field"></textarea></label>',
            r"clipped away by <label\.sr-only>",
        ),
        (
            '<textarea id="field" style="width: 1px; height: 1px; padding: 0; border: 0"></textarea>',
            r"has no box to see: 1x1 px",
        ),
        (
            '<div style="height: 20px; overflow: hidden"><textarea id="field"></textarea></div>',
            r"clipped away by <div> \(overflow: hidden hidden\)",
        ),
        (
            '<textarea id="field" style="clip-path: inset(50%)"></textarea>',
            r"clipped away by <textarea#field> \(clip-path: inset\(50%\)\)",
        ),
        ('<textarea id="field" style="position: absolute; left: -10000px"></textarea>', r"lies outside the viewport"),
        ('<div style="opacity: 0"><textarea id="field"></textarea></div>', r"is transparent: opacity 0"),
        (
            '<textarea id="field"></textarea><div class="veil" style="position: absolute; inset: 0; background: #fff"></div>',
            r"covered .* by <div\.veil>",
        ),
    ],
    ids=[
        "inside-a-visually-hidden-label",
        "a-1px-box",
        "overflow-of-a-short-box",
        "clip-path",
        "off-screen",
        "transparent",
        "covered",
    ],
)
def test_a_hidden_field_fails_with_the_reason(page, body, why):
    open_page(page, body)
    with pytest.raises(AssertionError, match=why):
        assert_seen_by_a_person(page.locator("#field"), seconds=SECONDS)


def test_a_field_a_person_sees_passes_and_takes_typing(page):
    open_page(page, '<label for="field" class="sr-only">Your reply</label><textarea id="field">old</textarea>')
    field = page.get_by_label("Your reply")
    assert_seen_by_a_person(field, seconds=SECONDS)
    type_into(field, "typed over the old text")


def test_a_field_far_down_the_page_is_scrolled_to(page):
    open_page(page, '<div style="height: 3000px"></div><textarea id="field"></textarea>')
    assert_seen_by_a_person(page.locator("#field"), seconds=SECONDS)


def test_inside_a_frame_the_field_and_the_frame_are_both_judged(page):
    inner_css = f"{SR_ONLY} textarea {{ width: 300px; height: 80px; }}"
    seen = f"<style>{inner_css}</style><textarea id='field'></textarea>"
    hidden = f"<style>{inner_css}</style><label class='sr-only'>Reply<textarea id='field'></textarea></label>"
    page.set_content(
        f'<!doctype html><iframe id="seen" srcdoc="{seen}" style="width: 400px; height: 150px"></iframe>'
        f'<iframe id="hidden" srcdoc="{hidden}" style="width: 400px; height: 150px"></iframe>'
        f'<div style="height: 40px; overflow: hidden"><iframe id="cut" srcdoc="{seen}" style="width: 400px; height: 150px; margin-top: 0"></iframe></div>'
    )
    assert_seen_by_a_person(page.frame_locator("#seen").locator("#field"), seconds=SECONDS)
    type_into(page.frame_locator("#seen").locator("#field"), "in a frame")
    with pytest.raises(AssertionError, match=r"clipped away by <label\.sr-only>"):
        assert_seen_by_a_person(page.frame_locator("#hidden").locator("#field"), seconds=SECONDS)
    # the field is whole inside its frame, but the page shows only the frame's top 40 px
    with pytest.raises(AssertionError, match=r"<iframe#cut> is clipped away by <div> \(overflow"):
        assert_seen_by_a_person(page.frame_locator("#cut").locator("#field"), seconds=SECONDS)
