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
  let current = null;  // how the reader is signed in now: 'sso', 'email' or null
  const labels = {};  // "(via email)", in the reader's language, as the window said it

  if (button) {
    button.addEventListener('click', () => {
      const q = new URLSearchParams({ site: root.dataset.site, lang: root.dataset.lang || '' });
      popup = window.open(`/auth/?${q}`, 'comments-signin', 'popup,width=480,height=640');
      if (popup) popup.focus();
    });
  }

  window.addEventListener('message', (event) => {
    if (!popup || event.source !== popup || event.origin !== location.origin) return;
    const msg = event.data;
    if (!msg || msg.type !== 'comments:signin' || typeof msg.token !== 'string' || msg.site !== root.dataset.site) return;
    popup = null;
    if (current === 'sso') return;
    if (typeof msg.via_label === 'string') labels[msg.via] = msg.via_label;
    root.dispatchEvent(new CustomEvent('cw:signed-in', { detail: { token: msg.token, user: msg.user, via: msg.via } }));
  });

  root.addEventListener('cw:user', (event) => {
    current = event.detail.via;
    // "(via email)": only for a way of signing in on the service; the host's needs no word.
    const label = (event.detail.user && current && labels[current]) || '';
    via.textContent = label ? ` ${label}` : '';
    via.hidden = !label;
  });
})();
