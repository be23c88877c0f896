"""Browser tests: Playwright for Python driving Debian's Chromium (``/usr/bin/chromium``,
``apt-get install -y chromium``; never ``playwright install``) against the live server.

Every test gets a fresh browser context. ``shot(page, name)`` saves a screenshot of a page state
under ``test-output/browser/`` (``BROWSER_OUTPUT`` overrides); a failing test leaves a
screenshot of every page it had open there, named after the test.

The tests act as a person does: ``click(locator)`` and ``type_into(locator, text)`` first
``assert_seen_by_a_person(locator)``, then click with the mouse and type with the keyboard. A
field filled through code (``fill()``) or clicked with ``force=True`` may be one nobody can see.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Locator, expect

# Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
# around it are still synchronous code, which Django refuses under a running loop unless told.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

OUTPUT = Path(os.environ.get("BROWSER_OUTPUT", Path(__file__).resolve().parents[2] / "test-output" / "browser"))


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.browser)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")[:150]


@pytest.fixture
def shot(request):
    """``shot(page, "name")``: save a screenshot of the page's state now; returns the path."""
    test = _slug(request.node.name)

    def take(page, name: str, *, full_page: bool = True) -> Path:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        path = OUTPUT / f"{test}--{_slug(name)}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take


@pytest.fixture
def context(browser, request):
    """A fresh browser context (cookies, storage); on failure, a screenshot of each open page."""
    ctx = browser.new_context(viewport={"width": 1100, "height": 900}, locale="en-US")
    ctx.set_default_timeout(10_000)
    yield ctx
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        OUTPUT.mkdir(parents=True, exist_ok=True)
        for index, open_page in enumerate(ctx.pages):
            try:
                open_page.screenshot(
                    path=str(OUTPUT / f"FAILED--{_slug(request.node.name)}--{index}.png"), full_page=True
                )
            except Exception:  # noqa: BLE001 - a crashed page: nothing to save
                pass
    ctx.close()


@pytest.fixture
def page(context):
    """A page whose console errors and failed requests are collected in ``page.problems``."""
    new_page = context.new_page()
    new_page.problems = []
    new_page.on(
        "console", lambda m: new_page.problems.append(f"console.{m.type}: {m.text}") if m.type == "error" else None
    )
    new_page.on("pageerror", lambda e: new_page.problems.append(f"pageerror: {e}"))
    return new_page


# What a person sees of an element, judged inside the element's own document. Without ``inner``
# the element is judged whole; with it, the element is the <iframe> of a document in which an
# element was seen, ``inner`` the part of that document's viewport it was seen through, and the
# question is whether that part of the frame is seen in turn. Returns {problem} or {visible}, the
# visible part in this document's viewport coordinates.
_SEEN_IN_ITS_DOCUMENT = """
(el, inner) => {
  const SMALLEST = 4;  // px each way: less, and a person could neither see nor aim at it
  const view = el.ownerDocument.defaultView;
  const doc = el.ownerDocument;
  const name = (node) => {
    const classes = typeof node.className === 'string' ? node.className.trim().split(/\\s+/).filter(Boolean) : [];
    return `<${node.tagName.toLowerCase()}${node.id ? '#' + node.id : ''}${classes.map((c) => '.' + c).join('')}>`;
  };
  const size = (r) => `${Math.round(r.right - r.left)}x${Math.round(r.bottom - r.top)} px`;
  const area = (r) => Math.max(0, r.right - r.left) * Math.max(0, r.bottom - r.top);
  const meet = (a, b) => ({
    left: Math.max(a.left, b.left), top: Math.max(a.top, b.top),
    right: Math.min(a.right, b.right), bottom: Math.min(a.bottom, b.bottom),
  });
  const plain = (r) => ({ left: r.left, top: r.top, right: r.right, bottom: r.bottom });

  const box = el.getBoundingClientRect();
  let whole;
  if (inner) {
    const style = view.getComputedStyle(el);
    const left = box.left + el.clientLeft + parseFloat(style.paddingLeft);
    const top = box.top + el.clientTop + parseFloat(style.paddingTop);
    whole = { left: left + inner.left, top: top + inner.top, right: left + inner.right, bottom: top + inner.bottom };
  } else {
    if (box.width < SMALLEST || box.height < SMALLEST) return { problem: `${name(el)} has no box to see: ${size(box)}` };
    whole = plain(box);
  }
  // A part counts when it is a few pixels each way and at least half of the element (or, for
  // an element larger than the screen, a good part of the screen).
  const enough = (part) => part.right - part.left >= SMALLEST && part.bottom - part.top >= SMALLEST
    && area(part) >= Math.min(area(whole) / 2, (view.innerWidth * view.innerHeight) / 4);

  // Clipping. clip and clip-path clip an element and everything in it; overflow clips only what
  // has the element in its chain of containing blocks (an absolutely positioned box escapes
  // the overflow of static ancestors). The root and the body clip through the viewport, below.
  let visible = whole;
  let position = view.getComputedStyle(el).position;
  let opacity = 1;
  for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
    const style = view.getComputedStyle(node);
    opacity *= parseFloat(style.opacity);
    const nodeBox = node.getBoundingClientRect();
    const clips = [];
    if (node !== el) {
      const contains = position === 'fixed' ? style.transform !== 'none'
        : position === 'absolute' ? style.position !== 'static' || style.transform !== 'none' : true;
      if (contains) {
        const overflows = style.overflowX !== 'visible' || style.overflowY !== 'visible';
        if (overflows && node !== doc.documentElement && node !== doc.body) {
          const left = nodeBox.left + node.clientLeft;
          const top = nodeBox.top + node.clientTop;
          clips.push([`overflow: ${style.overflowX} ${style.overflowY}`,
            { left, top, right: left + node.clientWidth, bottom: top + node.clientHeight }]);
        }
        position = style.position;
      }
    }
    if ((style.position === 'absolute' || style.position === 'fixed') && style.clip && style.clip !== 'auto') {
      const edges = (style.clip.match(/rect\\((.*)\\)/) || [null, ''])[1].split(/[\\s,]+/);
      const at = (value, otherwise) => (value === 'auto' || value === undefined ? otherwise : parseFloat(value));
      clips.push([`clip: ${style.clip}`, {
        left: nodeBox.left + at(edges[3], 0), top: nodeBox.top + at(edges[0], 0),
        right: nodeBox.left + at(edges[1], nodeBox.width), bottom: nodeBox.top + at(edges[2], nodeBox.height),
      }]);
    }
    if (style.clipPath && style.clipPath !== 'none') {
      const inset = style.clipPath.match(/^inset\\(([^)]*?)(?:\\s+round\\b[^)]*)?\\)/);
      if (inset) {
        const v = inset[1].trim().split(/\\s+/);
        const [t, r, b, l] = [v[0], v[1] ?? v[0], v[2] ?? v[0], v[3] ?? v[1] ?? v[0]];
        const len = (value, whole) => (value.endsWith('%') ? (parseFloat(value) / 100) * whole : parseFloat(value));
        clips.push([`clip-path: ${style.clipPath}`, {
          left: nodeBox.left + len(l, nodeBox.width), top: nodeBox.top + len(t, nodeBox.height),
          right: nodeBox.right - len(r, nodeBox.width), bottom: nodeBox.bottom - len(b, nodeBox.height),
        }]);
      } else {  // a shape: at most the box it is drawn in
        clips.push([`clip-path: ${style.clipPath}`, plain(nodeBox)]);
      }
    }
    for (const [how, region] of clips) {
      visible = meet(visible, region);
      if (!enough(visible)) {
        return { problem: `${name(el)} is clipped away by ${name(node)} (${how}): ${size(visible)} of ${size(whole)} show` };
      }
    }
  }

  // Scrolled into view as far as the page lets it be; the window shows the rest or not.
  visible = meet(visible, { left: 0, top: 0, right: view.innerWidth, bottom: view.innerHeight });
  if (!enough(visible)) {
    return { problem: `${name(el)} lies outside the viewport: ${size(visible)} of ${size(whole)} within the ${view.innerWidth}x${view.innerHeight} px window` };
  }

  const style = view.getComputedStyle(el);
  if (style.visibility !== 'visible') return { problem: `${name(el)} has visibility: ${style.visibility}` };
  if (opacity < 0.1) return { problem: `${name(el)} is transparent: opacity ${opacity} with its ancestors` };

  // What a person would hit at the middle of what they see.
  const x = (visible.left + visible.right) / 2;
  const y = (visible.top + visible.bottom) / 2;
  const hit = doc.elementFromPoint(x, y);
  const mine = inner ? hit === el : hit !== null && (hit === el || el.contains(hit));
  if (!mine) {
    return { problem: `${name(el)} is covered at the middle of its visible part (${Math.round(x)}, ${Math.round(y)}) by ${hit ? name(hit) : 'nothing'}` };
  }
  return { visible };
}
"""


def _why_a_person_cannot_see(locator: Locator, timeout_ms: float) -> str | None:
    """None when a person sees ``locator``'s element; else what hides it. Judged in the element's
    own document first, then in each document up that frames it."""
    locator.scroll_into_view_if_needed(timeout=timeout_ms)
    element = locator.element_handle(timeout=timeout_ms)
    try:
        seen = element.evaluate(_SEEN_IN_ITS_DOCUMENT, None)
        frame = element.owner_frame()
        while "problem" not in seen and frame is not None and frame.parent_frame is not None:
            holder = frame.frame_element()
            seen = holder.evaluate(_SEEN_IN_ITS_DOCUMENT, seen["visible"])
            holder.dispose()
            frame = frame.parent_frame
    finally:
        element.dispose()
    return seen.get("problem")


def assert_seen_by_a_person(locator: Locator, *, seconds: float = 10) -> None:
    """Assert that a person sees ``locator``'s element, scrolled into view: it has a box of some
    size, within the viewport of its window (and of each window framing it), not clipped away by
    an ancestor (overflow, ``clip``, ``clip-path``: the visually hidden ``sr-only`` pattern fails),
    not ``visibility: hidden`` nor transparent, and the element at the middle of its visible part
    is it or inside it. Playwright's own ``to_be_visible`` passes all of those but the first.

    Gives the page up to ``seconds`` to settle, as a person would."""
    expect(locator).to_be_visible(timeout=seconds * 1000)  # there at all, first
    deadline = time.monotonic() + seconds
    seen_problem = None  # the last reason found by looking (not a look cut short)
    while True:
        try:
            # Each look gets a few seconds even at the deadline: on a loaded machine a look cut
            # to the milliseconds left would report its own timeout instead of the reason.
            problem = seen_problem = _why_a_person_cannot_see(
                locator, timeout_ms=max(deadline - time.monotonic(), 3) * 1000
            )
        except PlaywrightError as error:  # replaced while being looked at (a list re-rendered)
            problem = f"it went away while being looked at: {error.message.splitlines()[0]}"
        if problem is None:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"a person does not see {locator}: {seen_problem or problem}")
        locator.page.wait_for_timeout(100)


# Counts the pointer presses a frame's document receives (capture phase: before any handler).
_WATCH_PRESSES = """() => {
    if (!window.__pressesWatched) {
        window.__pressesWatched = true;
        window.__presses = 0;
        document.addEventListener('pointerdown', () => { window.__presses += 1; }, true);
    }
    return window.__presses;
}"""
_PRESSES = "() => new Promise((done) => requestAnimationFrame(() => done(window.__presses ?? -1)))"


def click(locator: Locator) -> None:
    """Click ``locator`` as a person does: once they see it, with the mouse (no ``force``).

    In a cross-origin frame, also check that the press reached the frame's document: Chromium
    can deliver it to the parent page's ``<iframe>`` element instead (see ``snap`` in
    test_widget.py), and a click delivered nowhere would otherwise fail later, as a state that
    never changed."""
    assert_seen_by_a_person(locator)
    frame = locator.element_handle().owner_frame()
    if frame is None or frame == frame.page.main_frame:
        locator.click()
        return
    before = frame.evaluate(_WATCH_PRESSES)
    locator.click()
    try:
        after = frame.evaluate(_PRESSES)
    except PlaywrightError:  # the click navigated the frame: it arrived
        return
    assert after != before, f"the click on {locator} never reached its frame (Chromium gave it to the parent page)"


def type_into(field: Locator, text: str) -> None:
    """Type ``text`` into ``field`` as a person does: click the field they see, select what it
    holds (typing replaces it) and type on the keyboard. ``fill()`` would set a value no one
    could have typed, into a field no one may see."""
    click(field)
    expect(field).to_be_focused()
    keyboard = field.page.keyboard
    keyboard.press("ControlOrMeta+A")
    keyboard.type(text)
    expect(field).to_have_value(text)


def choose(select: Locator, value: str) -> None:
    """Pick ``value`` in a <select> a person sees (the choice itself goes through Playwright: a
    native drop-down is drawn outside the page)."""
    assert_seen_by_a_person(select)
    select.select_option(value)
