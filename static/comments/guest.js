// Guest comments in the widget's frame (issue 14; API.md, "Guest comments"). A reader who is
// not signed in writes a name, an optional email and a comment in the guest form. As the form
// is shown the frame asks for its form token (signed, timestamped, good once); the comment goes
// with it, and not before the token's ``not_before``: sooner, the service refuses it as sent
// faster than a person writes.
//
// The answer carries a token of the guest, good until the comment's edit window ends. It is
// kept in this frame's storage (the service's origin, under this host page), so this browser,
// and no other, may edit or delete the comment until then, or post again under the same name;
// widget.js shows the comment ('cw:posted') and the guest as signed in. Signing in otherwise
// hides the guest form; signing out forgets the guest.
(() => {
  'use strict';
  const root = document.getElementById('cw');
  const form = document.getElementById('cw-guest');
  if (!root || !form) return;
  const S = JSON.parse(document.getElementById('cw-strings')?.textContent || '{}');
  const F = form.dataset;
  const mainForm = document.getElementById('cw-form');
  const via = document.getElementById('cw-me-via');
  const field = (name) => form.elements.namedItem(name);
  const stored = `comments-guest:${root.dataset.site}`;
  const MAX_WAIT_MS = 30_000;  // a not_before further off than this is a clock gone wrong
  let current = null;  // how the reader is signed in now: 'guest', 'sso', 'email', ... or null
  let formToken = null;  // the promise of the next form's { token, notBefore (ms, this clock) }

  const sleep = (ms) => new Promise((done) => { setTimeout(done, ms); });

  // The guest this browser holds: in memory, and in the frame's storage where the browser
  // allows a frame of another site storage (else for the page's life only).
  let memory = null;

  function session() {
    try {
      memory = memory || JSON.parse(localStorage.getItem(stored) || 'null');
    } catch (err) { /* storage refused or garbled: what memory holds */ }
    if (memory && typeof memory.token === 'string' && Date.parse(memory.expires_at) > Date.now()) return memory;
    forget();
    return null;
  }

  function keep(answer, email) {
    memory = { token: answer.token, expires_at: answer.expires_at, user: answer.user, email, via: 'guest' };
    try { localStorage.setItem(stored, JSON.stringify(memory)); } catch (err) { /* kept in memory only */ }
    return memory;
  }

  function forget() {
    memory = null;
    try { localStorage.removeItem(stored); } catch (err) { /* nothing kept */ }
  }

  async function call(method, path, body, bearer) {
    const headers = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (bearer) headers.Authorization = `Bearer ${bearer}`;
    const response = await fetch(`/api/v1/${path}`, {
      method, headers, credentials: 'omit', body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw Object.assign(new Error(data?.error?.code || 'error'), {
        code: data?.error?.code || 'error', retryAfter: Number(response.headers.get('Retry-After')) || 1,
      });
    }
    return data;
  }

  // The form's token, asked for as the form is shown and again after each comment sent. Its
  // wait is counted on this clock (the service's may differ; a wait cut short by that is
  // answered 'too_fast', and sent again).
  function askForToken() {
    const asked = call('GET', `guest/form?${new URLSearchParams({ site: root.dataset.site })}`).then((data) => ({
      token: data.token,
      notBefore: Date.now() + Math.min(Math.max(Date.parse(data.not_before) - Date.now(), 0), MAX_WAIT_MS),
    }));
    formToken = asked;
    asked.catch(() => { if (formToken === asked) formToken = null; });
    return asked;
  }

  async function freshToken() {
    const ready = await (formToken || askForToken());
    formToken = null;
    await sleep(ready.notBefore - Date.now());
    return ready.token;
  }

  function tell(where, text, kind = 'status') {
    const note = where.querySelector('.cw-note');
    const alert = where.querySelector('.cw-err');
    note.textContent = kind === 'status' ? text : '';
    alert.textContent = kind === 'error' ? text : '';
    alert.hidden = kind !== 'error';
  }

  const message = (code) => (code === 'guests_not_allowed' ? F.msgForbidden : (S.errors && S.errors[code]) || S.error);

  async function send(body) {
    let held = current === 'guest' ? session() : null;
    let token = await freshToken();
    // Sent once more when the form token came too soon (it spent nothing: the same again, a
    // little later) or went stale or was spent (a new one), or when the guest's hold ran out
    // sooner than this clock thought (as a new guest).
    for (let attempt = 0; ; attempt += 1) {
      try {
        return await call('POST', 'guest/comments', { ...body, form_token: token }, held && held.token);
      } catch (err) {
        if (attempt > 0) throw err;
        if (err.code === 'too_fast') await sleep(err.retryAfter * 1000);
        else if (['form_token_expired', 'form_token_used', 'form_token_invalid'].includes(err.code)) token = await freshToken();
        else if (err.code === 'not_authenticated' && held) { forget(); held = null; }
        else throw err;
      }
    }
  }

  // Posts from ``where`` (the guest form, or a reply form of a guest's) what ``fields`` says,
  // then widget.js shows the comment and the guest.
  async function post(where, fields, replyTo = null) {
    const button = where.querySelector('button[type="submit"]');
    button.disabled = true;
    tell(where, F.msgSending);
    try {
      const answer = await send({
        site: root.dataset.site, key: root.dataset.key, title: (root.dataset.title || '').slice(0, 300),
        url: /^https?:\/\//.test(root.dataset.url || '') ? root.dataset.url.slice(0, 2000) : '',
        website: field('website').value, ...fields,
      });
      tell(where, '');
      const detail = { comment: answer.comment, session: keep(answer, fields.email), form: where, replyTo };
      root.dispatchEvent(new CustomEvent('cw:posted', { detail }));
      return true;
    } catch (err) {
      tell(where, message(err.code), 'error');
      return false;
    } finally {
      button.disabled = false;
      if (!formToken) askForToken();
    }
  }

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const name = field('name').value.trim();
    const body = field('body').value;
    if (!name) { tell(form, F.msgName, 'error'); field('name').focus(); return; }
    if (!body.trim()) { tell(form, S.empty, 'error'); field('body').focus(); return; }
    if (await post(form, { name, email: field('email').value.trim(), body })) field('body').value = '';
  });

  // A reply form opened by a reader who is not signed in asks for the guest's name and email
  // too: the guest form's fields, with ids of the reply's own (its labels point at them).
  root.addEventListener('cw:reply-form', (event) => {
    if (current) return;
    const reply = event.detail.form;
    const who = form.querySelector('.cw-guest-who').cloneNode(true);
    who.querySelectorAll('input').forEach((input) => {
      const id = `${input.id}-${reply.dataset.replyTo}`;
      who.querySelector(`label[for="${input.id}"]`).htmlFor = id;
      input.id = id;
      input.value = field(input.name).value;
    });
    reply.prepend(who);
    who.querySelector('input').focus();
  });

  // A reply of a guest, or of a reader not signed in, goes the guest's way (the usual way
  // refuses a guest and needs a sign-in): taken before widget.js's own handler sees it.
  root.addEventListener('submit', (event) => {
    const reply = event.target;
    if (reply.dataset.form !== 'reply' || (current && current !== 'guest')) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    const held = current === 'guest' ? session() : null;
    const own = (name) => reply.elements.namedItem(name) || field(name);  // the reply's fields, else the guest form's
    const name = held ? held.user.name : own('name').value.trim();
    const email = held ? held.email || '' : own('email').value.trim();
    const body = reply.querySelector('textarea').value;
    if (!name) { tell(reply, F.msgName, 'error'); own('name').focus(); return; }
    if (!body.trim()) { tell(reply, S.empty, 'error'); return; }
    const target = document.getElementById(`c-${reply.dataset.replyTo}`);
    post(reply, { name, email, body, reply_to_id: Number(reply.dataset.replyTo) }, target);
  }, true);

  // Who is signed in decides what is shown: the guest form to a reader not signed in or
  // signed in as a guest (the usual form would refuse a guest), nothing of it to the others.
  root.addEventListener('cw:user', (event) => {
    const { user } = event.detail;
    const wasGuest = current === 'guest';
    current = user ? event.detail.via : null;
    if (wasGuest && current !== 'guest') forget();
    const guestCanWrite = !user || current === 'guest';
    form.hidden = !guestCanWrite;
    // A guest this browser holds is named above ("Ada (guest)"): the form asks only for the
    // comment, as it does a reader signed in (their name and address stay in its fields).
    form.querySelector('.cw-guest-intro').hidden = current === 'guest';
    form.querySelector('.cw-guest-who').hidden = current === 'guest';
    if (current === 'guest') {
      if (mainForm) mainForm.hidden = true;
      field('name').value = user.name;
      field('email').value = session()?.email || field('email').value;
      via.textContent = ` ${F.labelGuest}`;
      via.hidden = false;
    }
    if (guestCanWrite && !formToken) askForToken();
  });

  form.hidden = false;
  askForToken();
  const held = session();
  if (held) root.dispatchEvent(new CustomEvent('cw:signed-in', { detail: { ...held, quiet: true } }));
})();
