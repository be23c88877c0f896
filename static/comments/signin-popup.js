// The sign-in window (/auth/, on the service's own origin). On the page a sign-in link opens,
// it hands the result to the widget's frame that opened the window, with postMessage aimed at
// exactly this origin, and closes. A link opened in a tab of its own (from the mail program)
// has no opener: it passes the result on a same-origin BroadcastChannel to the window still
// waiting, which hands it on in turn. A provider's page may have cut the window off from the
// frame (Cross-Origin-Opener-Policy); the frame then takes the sign-in itself (signin.js), and
// the window closes.
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
  } else if (document.getElementById('si-waiting')) {
    const site = document.getElementById('si-waiting').dataset.site;
    const channel = new BroadcastChannel(CHANNEL);
    channel.addEventListener('message', (event) => {
      if (isResult(event.data) && event.data.site === site && handOn(event.data)) channel.close();
    });
  }
})();
