// The signed-in reader's notifications in the widget: an unread-count badge, and a list to open
// with "Mark read" on each unread one and "Mark all read", over the notifications API
// (docs/API.md, "Notifications"). The widget (widget.js) tells who is signed in by a
// ``cw:user`` event on its root carrying the user and their bearer token; the words come
// translated in the markup's data attributes (notifications/_badge.html).
(() => {
  'use strict';
  const root = document.getElementById('cw');
  const box = document.getElementById('cw-nt');
  if (!root || !box) return;
  const $ = (id) => document.getElementById(id);
  const badge = $('cw-nt-badge');
  const toggle = $('cw-nt-toggle');
  const panel = $('cw-nt-panel');
  const list = $('cw-nt-list');
  const W = box.dataset;
  const POLL_MS = 60000;
  let token = null;
  let newest = null;  // the id of the newest notification shown: "mark all read" goes up to it
  let poll = null;

  async function api(method, path, body) {
    const headers = { Accept: 'application/json', Authorization: `Bearer ${token}` };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const response = await fetch(`/api/v1/${path}`, {
      method, headers, credentials: 'omit', body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`notifications: ${response.status}`);
    return response.json();
  }

  function showCount(n) {
    badge.hidden = !n;
    badge.textContent = n > 99 ? '99+' : String(n);
    toggle.setAttribute('aria-label', n ? `${toggle.firstChild.textContent} (${W.unread.replace('{n}', n)})` : toggle.firstChild.textContent);
  }

  async function refreshCount() {
    if (!token) return;
    try { showCount((await api('GET', 'notifications/unread_count')).unread_count); } catch { /* the next poll tries again */ }
  }

  function describe(item) {
    const who = item.actor ? item.actor.name || item.actor.username : W.someone;
    if (item.kind === 'like_milestone') return W.like_milestone.replace('{n}', item.data.likes);
    if (item.kind === 'decision') return W[`decision_${item.data.decision}`] || W.decision_removed;
    if (item.kind === 'queue') return W.queue.replace('{n}', item.data.open);
    return (W[item.kind] || '{name}').replace('{name}', who);
  }

  function render(items) {
    list.replaceChildren(...items.map((item) => {
      const li = $('cw-nt-item').content.firstElementChild.cloneNode(true);
      li.dataset.id = item.id;
      li.classList.toggle('cw-nt-unread', !item.read);
      const what = li.querySelector('.cw-nt-what');
      what.textContent = describe(item);
      if (item.subject && /^https?:\/\//.test(item.subject.url)) what.href = item.subject.url; else what.removeAttribute('href');
      li.querySelector('.cw-nt-excerpt').textContent = item.comment ? item.comment.excerpt : '';
      li.querySelector('.cw-nt-read').hidden = item.read;
      return li;
    }));
    $('cw-nt-empty').hidden = items.length > 0;
    $('cw-nt-all').hidden = !items.some((item) => !item.read);
  }

  // A reader the host signed in with an address is offered emails there, and may stop them;
  // nothing is emailed to it before they say so (notifications/email).
  function showMail(state) {
    const line = $('cw-nt-mail');
    const address = state.offered || (state.from_host ? state.address : '');
    line.hidden = !address;
    if (!address) return;
    $('cw-nt-mail-text').textContent = (state.offered ? line.dataset.offer : line.dataset.on).replace('{address}', address);
    $('cw-nt-mail-on').hidden = !state.offered;
    $('cw-nt-mail-off').hidden = !!state.offered;
  }

  async function open() {
    $('cw-nt-error').hidden = true;
    try {
      showMail(await api('GET', 'notifications/email'));
      const page = await api('GET', 'notifications?limit=20');
      newest = page.items.length ? page.items[0].id : null;
      render(page.items);
      showCount(page.unread_count);
    } catch {
      $('cw-nt-error').hidden = false;
    }
  }

  toggle.addEventListener('click', async () => {
    const opening = panel.hidden;
    panel.hidden = !opening;
    toggle.setAttribute('aria-expanded', String(opening));
    if (opening) await open();
  });

  panel.addEventListener('click', async (event) => {
    const read = event.target.closest('.cw-nt-read');
    try {
      if (event.target.closest('#cw-nt-mail-on')) showMail(await api('PUT', 'notifications/email'));
      else if (event.target.closest('#cw-nt-mail-off')) showMail(await api('DELETE', 'notifications/email'));
      else if (read) {
        const li = read.closest('li');
        showCount((await api('PUT', `notifications/${li.dataset.id}/read`)).unread_count);
        li.classList.remove('cw-nt-unread');
        read.hidden = true;
        $('cw-nt-all').hidden = !list.querySelector('.cw-nt-unread');
      } else if (event.target.closest('#cw-nt-all')) {
        showCount((await api('POST', 'notifications/read_all', { up_to_id: newest })).unread_count);
        list.querySelectorAll('.cw-nt-unread').forEach((li) => {
          li.classList.remove('cw-nt-unread');
          li.querySelector('.cw-nt-read').hidden = true;
        });
        $('cw-nt-all').hidden = true;
      }
    } catch {
      $('cw-nt-error').hidden = false;
    }
  });

  root.addEventListener('cw:user', (event) => {
    // A guest has no notifications (none are kept for them): no link they could not use.
    token = event.detail && event.detail.user && event.detail.via !== 'guest' ? event.detail.token : null;
    box.hidden = !token;
    clearInterval(poll);
    if (!token) { panel.hidden = true; toggle.setAttribute('aria-expanded', 'false'); showCount(0); return; }
    refreshCount();
    poll = setInterval(refreshCount, POLL_MS);
  });
  document.addEventListener('visibilitychange', () => { if (!document.hidden) refreshCount(); });
})();
