// The signed-in reader's own data in the widget (docs/API.md, "Your data"): "Download my data"
// saves the document GET /api/v1/me/data answers; "Delete my account", once confirmed, erases
// the account (DELETE /api/v1/me/data) and widget.js signs the reader out ('cw:erased'). For
// readers with an account: a guest's comments are the site's to answer for (operations.md).
// widget.js tells who is signed in by a ``cw:user`` event carrying the user and their token.
(() => {
  'use strict';
  const root = document.getElementById('cw');
  const box = document.getElementById('cw-md');
  if (!root || !box) return;
  const $ = (id) => document.getElementById(id);
  const toggle = $('cw-md-toggle');
  const panel = $('cw-md-panel');
  const confirmation = $('cw-md-confirm');
  const error = $('cw-md-error');
  let token = null;

  async function myData(method) {
    const response = await fetch('/api/v1/me/data', {
      method, headers: { Accept: 'application/json', Authorization: `Bearer ${token}` }, credentials: 'omit',
    });
    if (!response.ok) throw new Error(`my data: ${response.status}`);
    return response;
  }

  function close() {
    panel.hidden = true;
    confirmation.hidden = true;
    error.hidden = true;
    toggle.setAttribute('aria-expanded', 'false');
  }

  toggle.addEventListener('click', () => {
    const opening = panel.hidden;
    close();
    panel.hidden = !opening;
    toggle.setAttribute('aria-expanded', String(opening));
  });

  $('cw-md-download').addEventListener('click', async () => {
    error.hidden = true;
    try {
      const link = document.createElement('a');
      link.href = URL.createObjectURL(await (await myData('GET')).blob());
      link.download = box.dataset.filename;
      link.click();
      setTimeout(() => URL.revokeObjectURL(link.href), 60000);
    } catch {
      error.hidden = false;
    }
  });

  $('cw-md-delete').addEventListener('click', () => {
    confirmation.hidden = false;
    $('cw-md-cancel').focus();  // the safe choice first
  });
  $('cw-md-cancel').addEventListener('click', () => {
    confirmation.hidden = true;
    $('cw-md-delete').focus();
  });
  $('cw-md-erase').addEventListener('click', async () => {
    error.hidden = true;
    try {
      await myData('DELETE');
    } catch {
      error.hidden = false;
      return;
    }
    close();
    root.dispatchEvent(new CustomEvent('cw:erased', { detail: { message: box.dataset.deleted } }));
  });

  root.addEventListener('cw:user', (event) => {
    const { user, via } = event.detail || {};
    token = user && via !== 'guest' ? event.detail.token : null;
    box.hidden = !token;
    if (!token) close();
  });
})();
