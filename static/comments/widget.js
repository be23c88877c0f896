// The comment widget inside its iframe. The page is complete server-rendered HTML; this script
// adds sign-in (an SSO payload from the host page, exchanged for a bearer token kept in memory),
// writes through the JSON API, and fetches server-rendered fragments for everything it shows.
(() => {
  'use strict';
  const html = document.documentElement;
  html.classList.remove('no-js');
  const root = document.getElementById('cw');
  const D = root ? root.dataset : {};
  const parentOrigin = D.parentOrigin || '';
  const embedded = parentOrigin && window.parent !== window;
  const S = JSON.parse(document.getElementById('cw-strings')?.textContent || '{}');
  let token = null;
  let me = null;
  let via = null;
  let signInAsked = false;  // the host was asked to sign the reader in, at their click

  // --- the host page: messages only to and from the site's allowed origin ------------------
  const tell = (msg) => { if (embedded) window.parent.postMessage(msg, parentOrigin); };
  let lastHeight = 0;
  const resize = () => {
    const height = Math.ceil(document.body.getBoundingClientRect().height);
    if (height !== lastHeight) { lastHeight = height; tell({ type: 'comments:resize', height }); }
  };
  new ResizeObserver(resize).observe(document.body);
  window.addEventListener('load', resize);
  if (!root) { resize(); return; }

  window.addEventListener('message', (event) => {
    if (!embedded || event.origin !== parentOrigin || event.source !== window.parent) return;
    const msg = event.data;
    if (!msg || typeof msg !== 'object') return;
    if (msg.type === 'comments:login' && typeof msg.payload === 'string') login(msg.payload);
    else if (msg.type === 'comments:logout') logout();
    else if (msg.type === 'comments:focus' && typeof msg.id === 'string') showLinked(msg.id);
  });

  // --- helpers -----------------------------------------------------------------------------
  const $ = (sel, el = root) => el.querySelector(sel);
  const errorText = (err) => (S.errors && S.errors[err.code]) || S.error;

  // --- messages: each one shown next to what caused it, until the next action ---------------
  // On a long thread the widget is as tall as the thread, so a message at its top or bottom is
  // off-screen. ``where`` says where the person acted: a form (its own status and alert lines
  // by its submit button), 'top' (sign in/out, sort: the lines under the sign-in), or a
  // function that puts a new line into the page (beside a comment's actions, in place of a
  // deleted comment, where a "load more" link was) and returns what to take away later.
  let shown = null;  // { line, remove } of the message on screen
  function unsay() {
    if (!shown) return;
    shown.remove();
    shown = null;
  }

  function say(text, where = 'top', kind = 'status') {
    unsay();
    const error = kind === 'error';
    let line;
    let remove;
    if (where === 'top' || where instanceof HTMLFormElement) {
      const holder = where === 'top' ? $('.cw-user') : where;
      line = $(error ? '.cw-err' : '.cw-note, #cw-status', holder);
      line.textContent = '';
      line.hidden = false;
      remove = () => { line.textContent = ''; if (error) line.hidden = true; };
    } else {
      line = document.createElement('p');
      line.className = error ? 'cw-msg cw-err' : 'cw-msg cw-note';
      line.setAttribute('role', error ? 'alert' : 'status');
      if (!error) line.setAttribute('aria-live', 'polite');
      const outer = where(line) || line;
      if (!outer.isConnected) { say(text, 'top', kind); return; }  // what it was for is gone
      remove = () => outer.remove();
    }
    const mine = { line, remove };
    shown = mine;
    // Filled a moment after it is in place (and emptied), so screen readers announce it, even
    // when it says again what it said before.
    requestAnimationFrame(() => { if (shown === mine) line.textContent = text; });
  }

  // Where a message about ``el`` (clicked, in comment ``c`` if any) goes.
  function nextTo(el, c) {
    const form = el.closest('form');
    if (form) return form;
    if (el.closest('.cw-top, .cw-user')) return 'top';
    if (c && c.isConnected) return besideComment(c);
    if (el.isConnected) return (line) => { el.after(line); };
    return 'top';
  }

  const besideComment = (c) => (line) => {
    const actions = $(':scope > .cw-actions', c);
    if (actions) actions.after(line); else c.append(line);
  };

  // A line in a list of comments, as one of its items.
  const asItem = (line) => {
    const li = document.createElement('li');
    li.className = 'cw-msg-item';
    li.append(line);
    return li;
  };

  class ApiError extends Error {
    constructor(code, httpStatus) { super(code); this.code = code; this.status = httpStatus; }
  }

  async function api(method, path, body, extra = {}) {
    const headers = { Accept: 'application/json', ...extra };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch(`/api/v1/${path}`, {
      method, headers, credentials: 'omit', body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (response.status === 204) return null;
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      if (response.status === 401 && token) logout({ revoke: false });
      throw new ApiError(data?.error?.code || 'error', response.status);
    }
    return data;
  }

  async function fragment(url) {
    const headers = { 'X-Fragment': '1' };
    if (token) headers.Authorization = `Bearer ${token}`;
    const response = await fetch(url, { headers, credentials: 'omit' });
    if (!response.ok) {
      if (response.status === 401 && token) logout({ revoke: false });
      throw new ApiError(response.status === 404 ? 'not_found' : 'error', response.status);
    }
    const template = document.createElement('template');
    template.innerHTML = await response.text();
    return template.content;
  }

  const commentUrl = (id) => `/embed/fragments/comments/${id}?${D.query}`;

  // A number shown in words ("%s comments"), kept in the element's data-count.
  function recount(el, delta, one, other) {
    const n = Math.max(0, Number(el.dataset.count) + delta);
    el.dataset.count = n;
    el.textContent = (n === 1 ? one : other).replace('%s', n);
    return n;
  }

  function setCount(delta) {
    const n = recount($('#cw-count'), delta, S.count_one, S.count_other);
    tell({ type: 'comments:count', key: D.key, count: n });
  }

  // Two-level mode: the thread's "View all N replies", while its replies are folded.
  function setReplyCount(rootId, delta) {
    const link = document.getElementById(`replies-${rootId}`)?.querySelector(':scope > .cw-expand');
    if (link) recount(link, delta, S.replies_one, S.replies_other);
  }

  // --- signing in ------------------------------------------------------------------------
  // Who is signed in is told to the part scripts (notifications.js, signin.js, guest.js) by a
  // ``cw:user`` event. They are deferred after this one and listen only once they have run: a
  // sign-in answered sooner (a fast SSO, a slow script) waits for DOMContentLoaded, which
  // follows every deferred script, so none of them misses it.
  const partsListening = new Promise((resolve) => document.addEventListener('DOMContentLoaded', resolve, { once: true }));

  function renderUser() {
    $('#cw-signin').hidden = !!me;
    $('#cw-me').hidden = !me;
    $('#cw-me-name').textContent = me ? me.name : '';
    const form = $('#cw-form');
    if (form) form.hidden = !me;
    const detail = { user: me, token, via: me ? via : null };
    partsListening.then(() => root.dispatchEvent(new CustomEvent('cw:user', { detail })));
  }

  async function login(payload) {
    try {
      // Told only when the reader asked for it here ("Sign in"): a host page that signs its
      // reader in as it loads leaves no "Signed in." line standing above the discussion.
      const quiet = !signInAsked;
      signInAsked = false;
      await signedIn({ ...(await api('POST', 'auth/sso', { site: D.site, payload })), via: 'sso', quiet });
    } catch (err) {
      say(errorText(err), 'top', 'error');
      tell({ type: 'comments:login-failed' });
    }
  }

  // ``data``: a token, its user and how they signed in (``via``: 'sso', or what signin.js
  // hands over in a 'cw:signed-in' event after the sign-in window, or guest.js for a guest
  // this browser still holds: ``quiet``, as the reader did nothing just now).
  async function signedIn(data) {
    token = data.token;
    me = data.user;
    via = data.via;
    renderUser();
    await reload();
    if (!data.quiet) say(S.signed_in, 'top');
    tell({ type: 'comments:user', user: me });
  }
  root.addEventListener('cw:signed-in', (event) => {
    signedIn(event.detail).catch((err) => say(errorText(err), 'top', 'error'));
  });

  // A comment posted by guest.js from its ``form`` (a reply form when it answers ``replyTo``),
  // and the guest who posted it (its token lets this browser edit or delete it within the edit
  // window): shown as one posted here.
  root.addEventListener('cw:posted', (event) => {
    const { comment, session, form, replyTo } = event.detail;
    token = session.token;
    me = session.user;
    via = session.via;
    renderUser();
    tell({ type: 'comments:user', user: me });
    showPosted(comment, form, replyTo).catch((err) => say(errorText(err), form.isConnected ? form : 'top', 'error'));
  });

  // Signing out (the reader's button, or the host's Comments.logout()) revokes the token on the
  // service too (DELETE /api/v1/auth/session), so a copy of it left anywhere is worth nothing,
  // and removes the sign-in this frame kept (signin.js); a token the service refused already
  // (a 401) needs no revoking, and the frame stops asking for the one it kept.
  function logout({ revoke = true } = {}) {
    if (!token && !me) return;
    if (revoke && token) {
      fetch('/api/v1/auth/session', {
        method: 'DELETE', headers: { Authorization: `Bearer ${token}` }, credentials: 'same-origin', keepalive: true,
      }).catch(() => {});
    } else {
      document.cookie = `cw-signed-${D.site}=; Max-Age=0; Path=/; Secure; SameSite=None; Partitioned`;
    }
    token = null;
    me = null;
    renderUser();
    root.querySelectorAll('.cw-reply-form, .cw-report').forEach((f) => f.remove());
    reload().catch(() => {});
    say(S.signed_out, 'top');
    tell({ type: 'comments:user', user: null });
  }

  // The reader deleted their account (mydata.js): its token is gone with it, nothing to revoke.
  root.addEventListener('cw:erased', (event) => {
    logout({ revoke: false });
    say(event.detail.message, 'top');
  });

  const needUser = (where) => {
    if (token) return true;
    say(S.sign_in_first, where);
    signInAsked = true;
    tell({ type: 'comments:login-request' });
    $('#cw-signin').classList.add('cw-flash');
    return false;
  };

  // --- lists -------------------------------------------------------------------------------
  // The list's latest reload (after signing in, or a new sort). A comment posted meanwhile is
  // shown only after it: the reload's list may have been read before the comment was written,
  // and would otherwise replace the comment shown with a list that lacks it.
  let reloading = Promise.resolve();

  function reload() {
    reloading = (async () => {
      const list = $('#cw-list');
      list.setAttribute('aria-busy', 'true');
      try {
        const content = await fragment(`${D.list}&sort=${encodeURIComponent(D.sort)}`);
        list.replaceChildren(content);
      } finally {
        list.setAttribute('aria-busy', 'false');
      }
    })();
    return reloading;
  }

  // Appends the comments of ``content`` not shown yet; returns the first one appended.
  function appendNew(list, content, link) {
    const known = new Set([...root.querySelectorAll('.cw-c')].map((c) => c.id));
    const incoming = content.querySelector('ol');
    let first = null;
    for (const li of [...(incoming ? incoming.children : [])]) {
      const article = li.querySelector(':scope > .cw-c');
      if (!article || !known.has(article.id)) { list.append(li); first = first || li; }
    }
    const next = content.querySelector('.cw-more');
    if (next) link.replaceWith(next); else link.remove();
    return first;
  }

  // "Loaded": where the new comments begin, which is where the link clicked was.
  const whereLoaded = (list, first) => (line) => {
    if (first && first.isConnected) { const li = asItem(line); first.before(li); return li; }
    list.after(line);
    return line;
  };

  // A reply or edit form cloned from its template. Its box gets an id of its own, which its
  // visually hidden label points at: edit boxes can be open on several comments at once.
  function boxForm(templateId, boxId) {
    const form = $(`#${templateId}`).content.firstElementChild.cloneNode(true);
    $('textarea', form).id = boxId;
    $('label', form).htmlFor = boxId;
    return form;
  }

  // --- actions -----------------------------------------------------------------------------
  const likeTurns = new WeakMap();  // like button -> its latest request
  const actions = {
    login: (el, event, c, where) => { needUser(where); },
    logout: () => { logout(); },

    async sort(el, event) {
      event.preventDefault();
      D.sort = el.dataset.sort;
      root.querySelectorAll('[data-action="sort"]').forEach((a) => {
        if (a === el) a.setAttribute('aria-current', 'true'); else a.removeAttribute('aria-current');
      });
      await reload();
    },

    async more(el, event) {
      event.preventDefault();
      el.setAttribute('aria-busy', 'true');
      const content = await fragment(el.dataset.fragment);
      const list = el.parentElement.querySelector('.cw-items');
      say(S.loaded, whereLoaded(list, appendNew(list, content, el)));
    },

    async 'more-replies'(el, event) {
      event.preventDefault();
      const content = await fragment(el.href);
      const list = el.parentElement.querySelector('.cw-reply-list');
      say(S.loaded, whereLoaded(list, appendNew(list, content, el)));
    },

    async expand(el, event) {
      event.preventDefault();
      const box = document.getElementById(`replies-${el.dataset.root}`);
      const known = new Set([...box.querySelectorAll('.cw-c')].map((c) => c.id));
      box.replaceChildren(await fragment(el.href));
      const first = [...box.querySelectorAll('.cw-reply-list > li')]
        .find((li) => !known.has(li.querySelector(':scope > .cw-c')?.id));
      say(S.loaded, whereLoaded($('.cw-reply-list', box), first));
    },

    async unfold(el, event) {
      event.preventDefault();
      const chain = document.getElementById(`chain-${el.dataset.id}`);
      chain.replaceChildren(await fragment(el.href));
    },

    async like(el, event, c, where) {
      if (!needUser(where)) return;
      const counter = $('.cw-like-count', el);
      const was = el.getAttribute('aria-pressed') === 'true';
      const before = Number(counter.textContent);
      el.setAttribute('aria-pressed', String(!was));
      counter.textContent = Math.max(0, before + (was ? -1 : 1));
      // Quick clicks on one button are sent one after another, never side by side: two requests
      // in flight may be answered out of order and leave the button showing the older state.
      // Only the answer to the latest click paints the button.
      const turn = (likeTurns.get(el) || Promise.resolve())
        .catch(() => {})
        .then(() => api(was ? 'DELETE' : 'PUT', `comments/${c.dataset.id}/like`));
      likeTurns.set(el, turn);
      try {
        const data = await turn;
        if (likeTurns.get(el) !== turn) return;
        el.setAttribute('aria-pressed', String(data.liked));
        counter.textContent = data.like_count;
      } catch (err) {
        if (likeTurns.get(el) !== turn) return;
        el.setAttribute('aria-pressed', String(was));
        counter.textContent = before;
        throw err;
      }
    },

    reply(el, event, c, where) {
      // On a site that takes guests (guest.js) a reader who is not signed in replies as one.
      if (!$('#cw-guest') && !needUser(where)) return;
      const open = c.nextElementSibling;
      if (open && open.matches('.cw-reply-form')) { $('textarea', open).focus(); return; }
      root.querySelectorAll('.cw-reply-form').forEach((f) => f.remove());
      const form = boxForm('cw-reply-template', `cw-reply-body-${c.dataset.id}`);
      form.dataset.replyTo = c.dataset.id;
      c.after(form);
      $('textarea', form).focus();
      root.dispatchEvent(new CustomEvent('cw:reply-form', { detail: { form } }));  // guest.js
    },

    async edit(el, event, c, where) {
      if (!needUser(where) || $('.cw-edit-form', c)) return;
      const data = await api('GET', `comments/${c.dataset.id}`);
      const form = boxForm('cw-edit-template', `cw-edit-body-${c.dataset.id}`);
      const area = $('textarea', form);
      area.value = data.body;
      // The form takes the body's place, and its own buttons the action row's.
      $('.cw-body', c).hidden = true;
      $('.cw-actions', c).hidden = true;
      $('.cw-body', c).after(form);
      area.focus();
    },

    async delete(el, event, c, where) {
      if (!needUser(where)) return;
      if (el.dataset.confirm !== '1') {
        el.dataset.confirm = '1';
        el.dataset.label = el.textContent;
        el.textContent = S.confirm_delete;
        el.classList.add('cw-danger');
        return;
      }
      await api('DELETE', `comments/${c.dataset.id}`);
      const counted = !c.classList.contains('cw-pending');
      const fresh = (await fragment(`${commentUrl(c.dataset.id)}&missing=empty`)).getElementById(`c-${c.dataset.id}`);
      if (counted) {
        setCount(-1);
        if (c.dataset.depth !== '0') setReplyCount(c.dataset.root, -1);
      }
      if (fresh) { // a placeholder: it still has replies
        c.replaceWith(fresh);
        say(S.deleted, besideComment(fresh));
        return;
      }
      // Said where the comment was.
      const item = c.closest('li');
      say(S.deleted, (line) => {
        if (item) { const li = asItem(line); item.replaceWith(li); return li; }
        c.replaceWith(line);
        return line;
      });
    },

    report(el, event, c, where) {
      if (!needUser(where) || $('.cw-report', c)) return;
      const form = $('#cw-report-template').content.firstElementChild.cloneNode(true);
      $('.cw-actions', c).after(form);
      $('select', form).focus();
    },

    cancel(el) {
      const form = el.closest('form');
      const c = form.closest('.cw-c');
      if (form.dataset.form === 'edit') { $('.cw-body', c).hidden = false; $('.cw-actions', c).hidden = false; }
      form.remove();
      if (c) $('[data-action]', c)?.focus();
    },
  };

  root.addEventListener('click', async (event) => {
    const el = event.target.closest('[data-action]');
    if (!el || !root.contains(el) || !actions[el.dataset.action]) return;
    const c = el.closest('.cw-c');
    const where = nextTo(el, c);
    unsay();
    if (el.dataset.action !== 'delete') {
      root.querySelectorAll('[data-confirm="1"]').forEach((b) => {
        b.dataset.confirm = ''; b.textContent = b.dataset.label; b.classList.remove('cw-danger');
      });
    }
    try {
      await actions[el.dataset.action](el, event, c, where);
    } catch (err) {
      el.removeAttribute('aria-busy');
      // Beside what was clicked, or what is left of it (a comment re-rendered meanwhile).
      say(errorText(err), el.isConnected ? nextTo(el, el.closest('.cw-c')) : where, 'error');
    }
  });

  // --- forms -------------------------------------------------------------------------------
  async function subjectId() {
    if (D.subject) return D.subject;
    const body = { site: D.site, key: D.key, title: (D.title || '').slice(0, 300) };
    if (/^https?:\/\//.test(D.url || '')) body.url = D.url.slice(0, 2000);
    const subject = await api('POST', 'subjects', body);
    D.subject = String(subject.id);
    return D.subject;
  }

  async function insertNew(comment, replyTo) {
    const li = (await fragment(commentUrl(comment.id))).querySelector('ol > li');
    if (!replyTo) {
      $('.cw-empty')?.remove();
      $('#cw-list .cw-items').prepend(li);
    } else if (D.mode === 'two_level') {
      const thread = document.getElementById(`replies-${comment.root_id}`);
      $('.cw-reply-list', thread).append(li);
    } else {
      (replyTo.closest('li') || replyTo).after(li);
    }
    const article = $('.cw-c', li);
    article.classList.add('cw-new');
    return article;
  }

  // A comment just posted from ``form``: shown where it belongs (``replyTo``: the comment it
  // answers, whose reply form goes), counted, and said beside it.
  async function showPosted(comment, form, replyTo) {
    if (replyTo) form.remove();
    await reloading.catch(() => {});  // its failure is said where it was asked for
    // A reload replaced the comment answered by its new copy, and may have shown this one.
    if (replyTo && !replyTo.isConnected) replyTo = document.getElementById(replyTo.id) || replyTo;
    const article = document.getElementById(`c-${comment.id}`) || await insertNew(comment, replyTo);
    if (comment.status === 'published') {
      setCount(1);
      if (replyTo) setReplyCount(comment.root_id, 1);
    }
    say(comment.status === 'pending' ? S.posted_review : S.posted, replyTo ? besideComment(article) : form);
    if (replyTo) $('[data-action]', article)?.focus();
  }

  // One Idempotency-Key per post: a post sent again after a timeout or a dropped connection
  // (the same form, the same words) carries the same key, so the service stores it once and
  // answers with the first answer; new words are a new post, with a new key.
  const postKeys = new WeakMap();  // form -> {text, key}
  function postKey(form, text) {
    const held = postKeys.get(form);
    if (held && held.text === text) return held.key;
    const key = crypto.randomUUID ? crypto.randomUUID() : `${Date.now()}-${Math.random().toString(36).slice(2)}`;
    postKeys.set(form, { text, key });
    return key;
  }
  const posted = (form) => { postKeys.delete(form); };

  const submitters = {
    async post(form, area) {
      const sid = await subjectId();
      const key = postKey(form, area.value);
      const comment = await api('POST', `subjects/${sid}/comments`, { body: area.value }, { 'Idempotency-Key': key });
      posted(form);
      area.value = '';
      await showPosted(comment, form, null);
    },

    async reply(form, area) {
      const target = document.getElementById(`c-${form.dataset.replyTo}`);
      const sid = await subjectId();
      const key = postKey(form, area.value);
      const comment = await api(
        'POST', `subjects/${sid}/comments`, { body: area.value, reply_to_id: Number(form.dataset.replyTo) },
        { 'Idempotency-Key': key },
      );
      posted(form);
      await showPosted(comment, form, target);
    },

    async edit(form, area) {
      const c = form.closest('.cw-c');
      await api('PATCH', `comments/${c.dataset.id}`, { body: area.value });
      const fresh = (await fragment(commentUrl(c.dataset.id))).getElementById(`c-${c.dataset.id}`);
      c.replaceWith(fresh);
      $('[data-action]', fresh)?.focus();
    },

    async report(form) {
      const c = form.closest('.cw-c');
      await api('POST', `comments/${c.dataset.id}/reports`, { reason: $('select', form).value });
      say(S.reported, (line) => { form.replaceWith(line); });
    },
  };

  root.addEventListener('submit', async (event) => {
    event.preventDefault();
    const form = event.target;
    const submit = submitters[form.dataset.form];
    if (!submit) return;
    const area = $('textarea', form);
    unsay();
    if (area && !area.value.trim()) { say(S.empty, form, 'error'); area.focus(); return; }
    if (!needUser(form)) return;
    const button = $('button[type="submit"]', form);
    button.disabled = true;
    try {
      await submit(form, area);
    } catch (err) {
      say(errorText(err), form.isConnected ? form : 'top', 'error');
    } finally {
      button.disabled = false;
    }
  });

  root.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') {
      const cancel = event.target.closest('form')?.querySelector('[data-action="cancel"]');
      if (cancel) cancel.click();
    } else if (event.key === 'Enter' && (event.ctrlKey || event.metaKey) && event.target.matches('textarea')) {
      event.target.form.requestSubmit();
    }
  });

  // --- a link to one comment (the host page's #comment-<id>) --------------------------------
  // Marked where it is when this page shows it; else shown above the list, with the floors it
  // answers, when it is a comment of this discussion the reader may see. Then the host page is
  // asked to bring it into view.
  async function showLinked(id) {
    if (!/^\d{1,20}$/.test(id) || !D.subject) return;
    let article = document.getElementById(`c-${id}`);
    if (!article) {
      const query = new URLSearchParams(D.query);
      query.set('mode', 'stacked');
      query.set('subject', D.subject);
      let li;
      try {
        li = (await fragment(`/embed/fragments/comments/${id}?${query}`)).querySelector('ol > li');
      } catch (err) {
        return;  // gone, or never one of this discussion's: the page as it is
      }
      if (!li || document.getElementById(`c-${id}`)) return;
      $('.cw-linked')?.remove();
      const box = document.createElement('section');
      box.className = 'cw-linked';
      const heading = document.createElement('h3');
      heading.textContent = S.linked;
      const list = document.createElement('ol');
      list.className = 'cw-items';
      list.append(li);
      box.append(heading, list);
      $('#cw-list').before(box);
      article = document.getElementById(`c-${id}`);
    }
    root.querySelectorAll('.cw-linked-c').forEach((el) => el.classList.remove('cw-linked-c'));
    article.classList.add('cw-linked-c');
    resize();
    tell({ type: 'comments:scroll', top: Math.round(article.getBoundingClientRect().top + window.scrollY) });
  }

  renderUser();
  resize();
  tell({ type: 'comments:ready' });
  const linked = new URLSearchParams(location.search).get('focus');
  if (linked) showLinked(linked);
})();
