// "Latest comments" sidebar: <div data-comments-latest data-site="…"></div> plus this script.
// Fills each such element with a list of the site's recent (data-kind="recent", the default)
// or most liked (data-kind="top", data-days="30") comments from the service's API, read across
// origins (the site's allowed origins), data-limit of them (1-20, default 5). Text only (no
// HTML of the comments is inserted) and no style of its own: the host styles the classes
// comments-latest, comments-latest-item, -author (with -guest inside for a guest), -subject,
// -text, -time.
(() => {
  'use strict';
  const src = new URL((document.currentScript || {}).src || '/static/comments/latest.js', location.href);
  const base = src.origin + src.pathname.replace(/\/static\/comments\/latest\.js$/, '');

  const el = (tag, cls, text) => {
    const node = document.createElement(tag);
    node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const plain = (html) => new DOMParser().parseFromString(html, 'text/html').body.textContent.trim();
  const link = (comment) => (comment.subject.url ? `${comment.subject.url}#comment-${comment.id}` : null);

  function item(comment, max) {
    const li = el('li', 'comments-latest-item');
    const text = plain(comment.html);
    const author = el('span', 'comments-latest-author', comment.author ? comment.author.name : '');
    // A guest (no account) is marked, so one named like a member is not taken for them.
    if (comment.author && comment.author.guest) author.append(' ', el('span', 'comments-latest-guest', '(guest)'));
    li.append(author);
    const subject = el(link(comment) ? 'a' : 'span', 'comments-latest-subject', comment.subject.title || comment.subject.key);
    if (link(comment)) subject.href = link(comment);
    li.append(' · ', subject);
    li.append(el('p', 'comments-latest-text', text.length > max ? `${text.slice(0, max - 1)}…` : text));
    const time = el('time', 'comments-latest-time', new Date(comment.created_at).toLocaleDateString());
    time.dateTime = comment.created_at;
    li.append(time);
    return li;
  }

  async function fill(box) {
    if (box.dataset.commentsLatestMounted) return;
    box.dataset.commentsLatestMounted = '1';
    const d = box.dataset;
    const kind = d.kind === 'top' ? 'top' : 'recent';
    const limit = Math.min(Math.max(parseInt(d.limit || '5', 10) || 5, 1), 20);
    const q = new URLSearchParams({ limit: String(limit) });
    if (kind === 'top' && d.days) q.set('days', d.days);
    try {
      const answer = await fetch(`${base}/api/v1/sites/${encodeURIComponent(d.site || '')}/comments/${kind}?${q}`, { credentials: 'omit' });
      if (!answer.ok) throw new Error(String(answer.status));
      const page = await answer.json();
      const list = el('ol', 'comments-latest');
      page.items.forEach((c) => list.append(item(c, parseInt(d.excerpt || '140', 10) || 140)));
      if (!page.items.length) list.append(el('li', 'comments-latest-empty', d.empty || 'No comments yet.'));
      box.replaceChildren(list);
    } catch (err) {
      box.dataset.commentsLatestError = String(err.message || err);
    }
  }

  const run = () => document.querySelectorAll('[data-comments-latest]').forEach(fill);
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', run);
  else run();
})();
