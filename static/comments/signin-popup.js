// The sign-in window (/auth/, on the service's own origin). On the page a sign-in link opens,
// it hands the result to the widget's frame that opened the window, with postMessage aimed at
// exactly this origin, and closes. A link opened in a tab of its own (from the mail program)
// has no opener: it passes the result on a same-origin BroadcastChannel to the window still
// waiting, which hands it on in turn. A provider's page may have cut the window off from the
// frame (Cross-Origin-Opener-Policy); the frame then takes the sign-in itself (signin.js), and
// the window closes. For that, the window's first page asks the frame that opened it for its
// name of the hand-off (postMessage on this origin alone) and registers it in the window's own
// session before the reader goes to a provider: a name in the window's address, which anyone's
// link can write, is never taken (issue 33, F1).
(() => {
  'use strict';
  const CHANNEL = 'comments-signin';
  const isResult = (msg) => msg && msg.type === 'comments:signin' && typeof msg.token === 'string';

  function handOn(msg) {
    const frame = window.opener;
    if (!frame || frame.closed) return false;
    frame.postMessage(msg, location.origin);
    window.close();
    return true;
  }

  const result = document.getElementById('si-result');
  if (result) {
    const msg = JSON.parse(result.textContent);
    if (isResult(msg) && !handOn(msg)) {
      const channel = new BroadcastChannel(CHANNEL);
      channel.postMessage(msg);
      channel.close();
      // Cut off from the frame by a provider's page: the frame takes the sign-in itself.
      if (msg.handoff) window.close();
    }
  } else if (document.getElementById('si-providers') && window.opener) {
    const providers = document.getElementById('si-providers');
    const named = new Promise((resolve) => {
      const fromFrame = (event) => {
        if (event.source !== window.opener || event.origin !== location.origin) return;
        const msg = event.data;
        if (!msg || msg.type !== 'comments:handoff' || !/^[0-9a-f]{64}$/.test(msg.name || '')) return;
        window.removeEventListener('message', fromFrame);
        resolve(msg.name);
      };
      window.addEventListener('message', fromFrame);
      // An opener that never answers (not the widget's frame): the sign-in goes on without.
      setTimeout(() => resolve(null), 3000);
    });
    window.opener.postMessage({ type: 'comments:handoff-ask' }, location.origin);
    // Registered before each start: the service takes it for the one sign-in that follows.
    const register = (name) => name && fetch(providers.dataset.handoff, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'X-CSRFToken': providers.dataset.csrf },
      body: new URLSearchParams({ handoff: name }),
    });
    providers.addEventListener('click', (event) => {
      const link = event.target.closest('a[href]');
      if (!link) return;
      event.preventDefault();
      named.then(register).catch(() => null).finally(() => { location.href = link.href; });
    });
  } else if (document.getElementById('si-waiting')) {
    const site = document.getElementById('si-waiting').dataset.site;
    const channel = new BroadcastChannel(CHANNEL);
    channel.addEventListener('message', (event) => {
      if (isResult(event.data) && event.data.site === site && handOn(event.data)) channel.close();
    });
  }
})();
