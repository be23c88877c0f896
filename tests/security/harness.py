"""What the XSS suite watches a browser with.

Every document of a watched context (every page, every frame of it, whatever its origin) gets
the hook before its own first script: ``window.__xss(n)`` and ``alert``, ``confirm``, ``prompt``
and ``print`` report to the test instead of doing anything, and a native dialog that opens
anyway is counted too. The context bypasses the service's Content-Security-Policy: the policy
is one layer of defence (tests/browser/test_csp.py tests it); this suite tests the other, that
nothing a person typed becomes markup, so a payload that the escaping or the sanitizer let
through runs and is counted even where the policy would have stopped it.

After a surface is loaded and exercised (scrolled, hovered, tabbed through: handlers that need a
person fire), ``Watch.check`` takes what ran since the last check, and scans every frame's DOM
for what would run on a click or a hover: event-handler attributes, ``javascript:`` (and
``data:``) URLs in links, forms and frames, ``srcdoc``, ``<base href>``, ``<meta refresh>``,
script elements carrying the hook, CSS expressions. ``Watch.assert_clean`` fails with all of it,
each payload named."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from playwright.sync_api import BrowserContext, Dialog, Page
from playwright.sync_api import Error as PlaywrightError

from .corpus import describe

HOOK = """
(() => {
  const report = (kind, detail) => {
    try { window.__xssReport(kind, String(detail), String(location.href)); } catch (e) { /* gone */ }
  };
  Object.defineProperty(window, '__xss', { value: (n) => report('__xss', n), writable: false, configurable: false });
  for (const name of ['alert', 'confirm', 'prompt', 'print']) {
    Object.defineProperty(window, name, {
      value: function (message) { report(name, message); return null; }, writable: false, configurable: false,
    });
  }
})();
"""

# What in a document would run on a click, a hover or a submit, or takes the document over;
# a list of findings, each saying what and where.
SCAN = r"""
() => {
  const found = [];
  const where = (el) => {
    const holder = el.closest('[id]');
    return `<${el.tagName.toLowerCase()}>` + (holder ? ` in #${holder.id}` : '');
  };
  const bare = (value) => value.replace(/[\u0000-\u0020\u007f\u00a0\u00ad\u200b-\u200f\u2028\u2029\ufeff]/g, '');
  const scripted = (value) => /^(javascript|vbscript|livescript):/i.test(bare(value));
  const document_ = (value) => /^data:(?!image\/(png|gif|jpe?g|webp)[;,])/i.test(bare(value));
  const URLS = new Set(['href', 'xlink:href', 'action', 'formaction', 'src', 'data', 'background', 'poster',
                        'codebase', 'code', 'to', 'values', 'from', 'by', 'dynsrc', 'lowsrc']);
  const MEDIA = new Set(['img', 'source', 'video', 'audio', 'input', 'picture', 'track']);
  const FRAMES = new Set(['iframe', 'frame', 'frameset', 'object', 'embed', 'applet', 'portal']);
  const text = (value) => JSON.stringify(value.slice(0, 100));
  for (const el of document.querySelectorAll('*')) {
    const tag = el.tagName.toLowerCase();
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      if (name.startsWith('on')) found.push(`${where(el)} has an event handler: ${name}=${text(attr.value)}`);
      else if (name === 'srcdoc') found.push(`${where(el)} has srcdoc=${text(attr.value)}`);
      else if (URLS.has(name) && scripted(attr.value)) found.push(`${where(el)} has ${name}=${text(attr.value)}`);
      else if (URLS.has(name) && !MEDIA.has(tag) && document_(attr.value)) {
        found.push(`${where(el)} has ${name}=${text(attr.value)}`);
      } else if (name === 'style' && /expression\s*\(|javascript:|-moz-binding|behavior\s*:/i.test(attr.value)) {
        found.push(`${where(el)} has style=${text(attr.value)}`);
      }
    }
    if (FRAMES.has(tag)) found.push(`${where(el)}: a frame or plug-in in the page`);
    if (tag === 'base' && el.hasAttribute('href')) found.push(`${where(el)} sets the base URL to ${text(el.getAttribute('href'))}`);
    if (tag === 'meta' && /refresh/i.test(el.getAttribute('http-equiv') || '')) found.push(`${where(el)} refreshes the page`);
    if (tag === 'script' && /__xss|\b(alert|confirm|prompt|print)\s*\(/.test(`${el.getAttribute('src') || ''} ${el.textContent}`)) {
      found.push(`${where(el)} carries a payload: ${text(el.outerHTML)}`);
    }
    if (tag === 'link' && /import/i.test(el.getAttribute('rel') || '')) found.push(`${where(el)} imports a document`);
    if (tag === 'form' && el.hasAttribute('action')) {
      try {
        const target = new URL(el.getAttribute('action'), document.baseURI);
        if (target.origin !== location.origin) found.push(`${where(el)} posts to ${text(target.href)}`);
      } catch (e) { found.push(`${where(el)} has action=${text(el.getAttribute('action'))}`); }
    }
  }
  // Each link as the browser will follow it (entities decoded, tabs, line breaks and leading
  // controls dropped by the URL parser): never to a script or a document made of its own URL.
  for (const a of document.querySelectorAll('a, area')) {
    const raw = a.getAttribute('href') ?? a.getAttributeNS('http://www.w3.org/1999/xlink', 'href');
    if (raw === null) continue;
    let protocol;
    try { protocol = new URL(raw, document.baseURI).protocol; } catch (e) { continue; }
    if (['javascript:', 'vbscript:', 'data:'].includes(protocol)) found.push(`${where(a)} links to ${protocol} ${text(raw)}`);
  }
  return found;
}
"""

# A person going over the page: to the bottom and back (lazy parts load, scroll handlers fire),
# the pointer across it (hover handlers), Tab through the first fields (focus handlers).
# (No waiting on animation frames: a frame out of sight gets none.)
SCROLL_DOWN = "() => { window.scrollTo(0, document.documentElement.scrollHeight); }"
SCROLL_UP = "() => { window.scrollTo(0, 0); }"
POINTS = [(80, 60), (400, 240), (720, 420), (1000, 600), (720, 780), (400, 600), (80, 420), (550, 120)]


@dataclass
class Watch:
    """Counts what ran in a context's documents and collects what each surface's check found."""

    ran: list[tuple[str, str, str]] = field(default_factory=list)  # (how, what, in which document)
    findings: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _taken: int = 0

    def install(self, context: BrowserContext) -> None:
        context.expose_binding("__xssReport", lambda source, how, what, url: self._record(how, what, url))
        context.add_init_script(HOOK)

    def _record(self, how: str, what: str, url: str) -> None:
        with self._lock:
            self.ran.append((how, what, url))

    def watch(self, page: Page) -> Page:
        """Also count the dialogs a page opens (were the hook ever bypassed) and the errors
        that name the hook (a payload that ran where the hook was missing)."""

        def dialog(opened: Dialog) -> None:
            self._record(f"native {opened.type}", opened.message, page.url)
            opened.dismiss()

        def error(thrown: PlaywrightError) -> None:
            if "__xss" in str(thrown):
                self._record("error", str(thrown), page.url)

        page.on("dialog", dialog)
        page.on("pageerror", error)
        return page

    def exercise(self, page: Page, *, frames: bool = True) -> None:
        """Scroll each frame to its end and back (``frames``; else the page alone), move the
        pointer over the page, tab through its first fields; then let what that started
        finish."""
        for scroll in (SCROLL_DOWN, SCROLL_UP):
            for frame in page.frames if frames else [page.main_frame]:
                try:
                    frame.evaluate(scroll)
                except PlaywrightError:
                    pass  # a frame that went away meanwhile
        for x, y in POINTS:
            page.mouse.move(x, y)
        for _ in range(3):
            page.keyboard.press("Tab")
        page.wait_for_timeout(100)

    def check(self, surface: str, page: Page, *, ours: bool = False, scroll_frames: bool = True) -> None:
        """Exercise ``page``, then note what ran since the last check and what each of its frames
        holds that would run. ``ours``: the page itself is the test's own (a host page, a mail
        program's list of messages) and only its frames are the service's, to be scanned."""
        self.exercise(page, frames=scroll_frames)
        for frame in page.frames:
            if ours and frame == page.main_frame:
                continue
            try:
                found = frame.evaluate(SCAN)
            except PlaywrightError as error:
                found = [f"could not be scanned: {error.message.splitlines()[0]}"]
            self.findings += [f"{surface}: {frame.url[:120]}: {finding}" for finding in found]
        self.take(surface)

    def take(self, surface: str) -> list[tuple[str, str, str]]:
        """What ran since the last check, noted against ``surface``; returned too."""
        with self._lock:
            new, self._taken = self.ran[self._taken :], len(self.ran)
        self.findings += [f"{surface}: {how}({describe(what)}) ran in {url[:120]}" for how, what, url in new]
        return new

    def assert_clean(self) -> None:
        assert not self.findings, f"{len(self.findings)} findings:\n" + "\n".join(self.findings[:200])


class HostSite:
    """A host site of ours on 127.0.0.1 (another origin than the service's ``localhost``):
    serves the pages put into ``pages`` by path, as text/html."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                html = pages.get(self.path.split("?")[0])
                self.send_response(200 if html is not None else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write((html or "").encode())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def page(self, path: str, body: str, title: str = "A host page") -> str:
        """Serve ``body`` at ``path``; its URL."""
        return self.origin + self.path(path, body, title)

    def path(self, path: str, body: str, title: str = "A host page") -> str:
        self.pages[path] = (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            f"<title>{title}</title></head><body>{body}</body></html>"
        )
        return path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def numbers(ran: Iterable[tuple[str, str, str]]) -> set[str]:
    return {what for _, what, _ in ran}
