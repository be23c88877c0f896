// Sign-in on the service itself, for the widget's frame (issue 14). Its "Sign in" button opens
// a small window on this same origin (/auth/: first party, so no third-party cookie is
// needed); that window hands back a bearer token with postMessage. Only a message from the
// window this frame opened, of this origin, is taken; widget.js then signs in with it
// ('cw:signed-in') and says who is signed in ('cw:user'). The host's SSO wins: a token from
// the window never replaces a reader the host signed in.
(() => {
  'use strict';
  const root = document.getElementById('cw');
  if (!root) return;
  const button = root.querySelector('[data-signin="popup"]');
  const via = document.getElementById('cw-me-via');
  let popup = null;
  let current = null;  // how the reader is signed in now: 'sso', 'email', a provider's key or null
  const labels = {};  // "(via email)", in the reader's language, as the window said it

  // A provider's page may cut the window off from this frame (Cross-Origin-Opener-Policy: the
  // window's opener is gone, and to the frame it looks closed); the window then cannot hand
  // the token over. So the frame names a hand-off by the SHA-256 of a secret only it keeps,
  // tells the name to the window it opened when that window asks (postMessage, this origin
  // only: the window registers it in its own session), and while the window looks closed asks
  // for the sign-in with the secret (POST /api/v1/auth/handoff), for five minutes at most.
  let handoff = null;  // {secret, name} for the next window
  let opened = null;  // the one the window that is open now was told
  let asking = null;
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
  async function nextHandoff() {
    handoff = null;
    if (!window.crypto || !crypto.subtle) return;  // not a secure context: the window alone
    const secret = hex(crypto.getRandomValues(new Uint8Array(32)));
    handoff = { secret, name: hex(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(secret)))) };
  }
  nextHandoff();

  function signedIn(msg) {
    popup = null;
    clearInterval(asking);
    nextHandoff();
    if (current === 'sso') return;
    if (typeof msg.via_label === 'string') labels[msg.via] = msg.via_label;
    root.dispatchEvent(new CustomEvent('cw:signed-in', { detail: { token: msg.token, user: msg.user, via: msg.via } }));
    remember(msg);
  }

  // Staying signed in (accounts/remembered.py): the frame keeps the window's sign-in in cookies
  // partitioned under the embedding page's site, so a reload, another page of this blog or a
  // new tab resume it; under another blog's pages the browser shows this frame none of them.
  // The readable cookie only says one is kept: a reader who never signed in costs no request.
  const kept = `cw-signed-${root.dataset.site}`;
  const keeps = () => document.cookie.split('; ').includes(`${kept}=1`);

  function remember(msg) {
    fetch('/api/v1/auth/session', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { Authorization: `Bearer ${msg.token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ via: msg.via }),
    }).catch(() => { /* kept in memory only: this page stays signed in */ });
  }

  async function resume() {
    const response = await fetch('/api/v1/auth/session/resume', {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ site: root.dataset.site, lang: root.dataset.lang || undefined }),
    });
    if (response.status !== 200 || current === 'sso') return;
    const msg = await response.json();
    labels[msg.via] = msg.via_label;
    root.dispatchEvent(new CustomEvent('cw:signed-in', { detail: { token: msg.token, user: msg.user, via: msg.via, quiet: true } }));
  }
  if (keeps()) resume().catch(() => { /* offline: the reader signs in again */ });

  function askWhileCutOff(opened, secret) {
    clearInterval(asking);
    const until = Date.now() + 5 * 60 * 1000;
    let waiting = false;
    asking = setInterval(async () => {
      if (popup !== opened || Date.now() > until) { clearInterval(asking); return; }
      if (!opened.closed || waiting) return;
      waiting = true;
      try {
        const response = await fetch('/api/v1/auth/handoff', {
          method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ secret }),
        });
        if (response.status === 200 && popup === opened) signedIn(await response.json());
      } catch (err) {
        // offline for a moment: asked again on the next tick
      } finally {
        waiting = false;
      }
    }, 2000);
  }

  if (button) {
    button.addEventListener('click', () => {
      const q = new URLSearchParams({ site: root.dataset.site, lang: root.dataset.lang || '' });
      const secret = handoff && handoff.secret;
      opened = handoff;
      popup = window.open(`/auth/?${q}`, 'comments-signin', 'popup,width=480,height=640');
      if (popup) popup.focus();
      if (popup && secret) askWhileCutOff(popup, secret);
    });
  }

  window.addEventListener('message', (event) => {
    if (!popup || event.source !== popup || event.origin !== location.origin) return;
    const msg = event.data;
    if (msg && msg.type === 'comments:handoff-ask') {
      if (opened) popup.postMessage({ type: 'comments:handoff', name: opened.name }, location.origin);
      return;
    }
    if (!msg || msg.type !== 'comments:signin' || typeof msg.token !== 'string' || msg.site !== root.dataset.site) return;
    signedIn(msg);
  });

  root.addEventListener('cw:user', (event) => {
    current = event.detail.via;
    // "(via email)": only for a way of signing in on the service; the host's needs no word.
    const label = (event.detail.user && current && labels[current]) || '';
    via.textContent = label ? ` ${label}` : '';
    via.hidden = !label;
  });
})();
