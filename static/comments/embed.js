// Comment widget loader: <div data-comments data-site="…" data-key="…"></div> plus this script.
// Frames the service's embed page, sizes it from its messages (service origin, own frame
// only), hands it an SSO payload, and fills [data-comment-count] from one counts call.
(() => {
  'use strict';
  if (window.Comments && window.Comments.version) return;
  const src = new URL((document.currentScript || {}).src || '/static/comments/embed.js', location.href);
  const service = src.origin;
  const base = service + src.pathname.replace(/\/static\/comments\/embed\.js$/, '');
  const frames = new Map();
  let payload = null;

  // A link to one comment on this page (feeds, emails and the latest-comments widget link to
  // "<page>#comment-<id>"): the widget shows and marks it, and asks for it to be scrolled to.
  const linkedComment = () => (/^#comment-(\d{1,20})$/.exec(location.hash) || [])[1] || null;

  const send = (entry, msg) => { if (entry.ready) entry.iframe.contentWindow.postMessage(msg, service); };
  const sendAll = (msg) => frames.forEach((entry) => send(entry, msg));

  function mount(el) {
    if (el.dataset.commentsMounted) return;
    el.dataset.commentsMounted = '1';
    const d = el.dataset;
    const q = new URLSearchParams({
      site: d.site || '', key: d.key || location.pathname, theme: d.theme || 'auto', origin: location.origin,
      title: (d.title || document.title).slice(0, 300), url: d.url || location.href.split('#')[0],
    });
    // The reader's language: the host's data-lang, else what the reader's browser asks the
    // service for (Accept-Language). The page's own <html lang> says what the host's text is
    // in, not what its reader reads.
    if (d.lang) q.set('lang', d.lang);
    if (d.mode) q.set('mode', d.mode);
    if (d.sso) payload = d.sso;
    const linked = linkedComment();
    if (linked) q.set('focus', linked);
    const iframe = document.createElement('iframe');
    iframe.src = `${base}/embed/?${q}`;
    iframe.title = d.frameTitle || 'Comments';
    iframe.loading = linked ? 'eager' : 'lazy';
    iframe.setAttribute('scrolling', 'no');
    Object.assign(iframe.style, { width: '100%', height: '240px', border: '0', display: 'block', overflow: 'hidden' });
    el.replaceChildren(iframe);
    frames.set(iframe.contentWindow, { el, iframe, key: q.get('key'), ready: false });
  }

  function fill(counts, els) {
    for (const el of els) {
      const n = counts[el.dataset.commentCount];
      if (typeof n === 'number') el.textContent = String(n);
    }
  }

  function counts() {
    const els = [...document.querySelectorAll('[data-comment-count]')];
    const first = document.querySelector('[data-comments][data-site]');
    const keys = [...new Set(els.map((el) => el.dataset.commentCount))].slice(0, 100);
    if (!keys.length) return;
    // A page without a widget (a listing) names no site: the service takes the site whose
    // allowed origins hold this page's origin.
    const site = src.searchParams.get('site') || (first && first.dataset.site);
    const q = new URLSearchParams(site ? { site } : {});
    keys.forEach((key) => q.append('key', key));
    fetch(`${base}/api/v1/counts?${q}`, { credentials: 'omit' })
      .then((r) => (r.ok ? r.json() : null))
      .then((data) => data && fill(data.counts, els))
      .catch(() => {});
  }

  window.addEventListener('message', (event) => {
    if (event.origin !== service) return;
    const entry = frames.get(event.source);
    const msg = event.data;
    if (!entry || !msg || typeof msg !== 'object') return;
    if (msg.type === 'comments:resize' && Number.isFinite(msg.height)) {
      entry.iframe.style.height = `${Math.min(Math.max(Math.ceil(msg.height), 80), 200000)}px`;
    } else if (msg.type === 'comments:ready') {
      entry.ready = true;
      if (payload) send(entry, { type: 'comments:login', payload });
    } else if (msg.type === 'comments:scroll' && Number.isFinite(msg.top)) {
      window.scrollTo({ top: entry.iframe.getBoundingClientRect().top + window.scrollY + Math.max(0, msg.top) - 16 });
    } else if (msg.type === 'comments:count' && typeof msg.count === 'number') {
      fill({ [entry.key]: msg.count }, document.querySelectorAll('[data-comment-count]'));
    } else if (['comments:login-request', 'comments:user', 'comments:login-failed'].includes(msg.type)) {
      // The host page listens for these to open its own sign-in, or to follow the user.
      entry.el.dispatchEvent(new CustomEvent(msg.type, { bubbles: true, detail: { user: msg.user || null } }));
    }
  });

  window.addEventListener('hashchange', () => {
    const id = linkedComment();
    if (id) sendAll({ type: 'comments:focus', id });
  });

  function scan() {
    document.querySelectorAll('[data-comments]').forEach(mount);
    counts();
  }

  window.Comments = {
    version: 1,
    scan,
    login(signed) { payload = String(signed); sendAll({ type: 'comments:login', payload }); },
    logout() { payload = null; sendAll({ type: 'comments:logout' }); },
  };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', scan); else scan();
})();
