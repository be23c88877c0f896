"""The moderation console (``/console/``): Django templates over the same queries and services
as the moderation API (``moderation/api.py``): the queue is ``queries.review_queue``, every
decision ``actions.comment_moderate``, claims
``services.review_task_claim``/``review_task_release``, words, sanctions and the audit log their
services and queries. Views validate input with a form, call one service or query, and render or
redirect; they hold no rule of their own.

Pages work without JavaScript (plain forms, POST then redirect); ``static/moderation/console.js``
adds keyboard shortcuts, claiming of the task in view and in-place updates by posting the same
forms with ``fetch`` and ``Accept: application/json``.

Access: signed-in staff (every site) and site moderators (their sites); anyone else signed in
gets 403, anonymous users the login page.
"""

from __future__ import annotations

from functools import wraps
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_POST

from comments.exceptions import CommentsError, InvalidInput, NotFound
from comments.exceptions import PermissionDenied as DomainPermissionDenied
from comments.models import Site, User
from comments.queries import present_user, site_by_key

from . import actions, queries, services
from .charts import bar_chart, line_chart
from .forms import ActionForm, QueueFilterForm, SanctionForm, SiteForm, WordForm
from .models import TaskState

QUEUE_PAGE = 25
LOG_PAGE = 50
WORDS_PAGE = 100
CHART_DAYS = 14


# --- access and errors ---------------------------------------------------------------------


def _wants_json(request: HttpRequest) -> bool:
    """The console's script asks for JSON explicitly; a browser's form post never does."""
    return request.headers.get("Accept", "").startswith("application/json")


def _error(request: HttpRequest, status: int, message: str, fields=None) -> HttpResponse:
    if _wants_json(request):
        code = {400: "invalid", 403: "permission_denied", 404: "not_found"}.get(status, "invalid")
        body = {"error": {"code": code, "message": message}}
        if fields:
            body["error"]["fields"] = fields
        return JsonResponse(body, status=status)
    return render(request, "moderation/error.html", {"status": status, "message": message, "fields": fields}, status=status)


class ConsoleRequest(HttpRequest):
    """A request as ``console_page`` hands it to a view: signed in, with the sites the user
    moderates."""

    user: User
    console_sites: list[Site]


def console_page(view):
    """Sign-in and role check for every console page, and the domain errors of the services
    and queries turned into pages: 404, 403, and 400 with the message (never a 500)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args, **kwargs):
        if not request.user.is_authenticated:
            if _wants_json(request):
                return JsonResponse({"error": {"code": "not_authenticated", "message": _("Please sign in again.")}}, status=401)
            return redirect_to_login(request.get_full_path(), reverse("console:login"))
        sites = queries.moderated_sites(request.user)
        if not sites:
            return _error(request, 403, _("Only site moderators and staff may use the moderation console."))
        request.console_sites = sites  # type: ignore[attr-defined]  # what makes it a ConsoleRequest
        try:
            return view(request, *args, **kwargs)
        except NotFound as exc:
            if _wants_json(request):
                return _error(request, 404, exc.message)
            raise Http404(exc.message) from None
        except DomainPermissionDenied as exc:
            return _error(request, 403, exc.message)
        except InvalidInput as exc:
            return _error(request, 400, exc.message, exc.fields)

    return wrapped


def _form_error(request: HttpRequest, form) -> HttpResponse:
    errors = {name: [str(e) for e in errs] for name, errs in form.errors.items()}
    message = " ".join(errors.pop("__all__", [])) or _("Please correct the highlighted fields.")
    return _error(request, 400, message, errors or None)


def _add_service_errors(form, exc: InvalidInput, renamed: dict[str, str] | None = None) -> None:
    """A service's ``InvalidInput`` shown on the form: each field's messages on the form field
    of that name (``renamed`` maps service names to form names), the rest on the whole form."""
    for name, errors in (exc.fields or {"__all__": [exc.message]}).items():
        name = (renamed or {}).get(name, name)
        for error in errors:
            form.add_error(name if name in form.fields else None, error)


def _site_key(request: ConsoleRequest, key: str | None) -> str:
    """The site a page is about: the one asked for (the query refuses a site the user does
    not moderate), else the user's first."""
    return key or request.console_sites[0].key


def _site(request: ConsoleRequest, key: str):
    """The Site for ``key`` from the user's sites; a site outside them is left to the query
    (which refuses it), so it is loaded plainly here."""
    for site in request.console_sites:
        if site.key == key:
            return site
    return site_by_key(key)


def _safe_next(request: HttpRequest, target: str | None, default: str) -> str:
    if target and target.startswith("/console/") and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return default


def _url(name: str, **params) -> str:
    params = {k: v for k, v in params.items() if v not in (None, "")}
    return reverse(name) + (f"?{urlencode(params)}" if params else "")


# --- sign in -------------------------------------------------------------------------------


class LoginView(auth_views.LoginView):
    template_name = "moderation/login.html"
    redirect_authenticated_user = True
    next_page = reverse_lazy("console:queue")  # type: ignore[assignment]  # lazy, as Django's docs do

    def get_redirect_url(self):  # type: ignore[override]  # Django's takes no request; its stubs do
        url = super().get_redirect_url()
        return url if url.startswith("/console/") else ""


class LogoutView(auth_views.LogoutView):
    next_page = reverse_lazy("console:login")  # type: ignore[assignment]  # lazy, as Django's docs do


# --- the queue -----------------------------------------------------------------------------


@require_GET
@console_page
def queue(request: ConsoleRequest) -> HttpResponse:
    form = QueueFilterForm(request.GET)
    if not form.is_valid():
        return _form_error(request, form)
    data = form.cleaned_data
    site_key = _site_key(request, data["site"])
    state = data["state"] or TaskState.OPEN
    page = queries.review_queue(
        user=request.user, site_key=site_key, state=state, limit=QUEUE_PAGE, cursor=data["cursor"] or None,
        reason=data["reason"] or None, older_than=form.older_than(),
    )
    subjects = queries.subjects_by_id(t["comment"]["subject_id"] for t in page.items if t["comment"])
    counts = queries.open_task_counts(sites=request.console_sites)
    filters = {"site": site_key, "state": state, "reason": data["reason"], "age": data["age"]}
    return render(request, "moderation/queue.html", {
        "nav": "queue",
        "site": _site(request, site_key),
        "sites": [(s, counts.get(s.pk, {}).get("open", 0)) for s in request.console_sites],
        "form": form,
        "filters": filters,
        "tasks": [dict(t, subject=subjects.get(t["comment"]["subject_id"]) if t["comment"] else None) for t in page.items],
        "next_url": _url("console:queue", **filters, cursor=page.next_cursor) if page.next_cursor else None,
        "first_url": _url("console:queue", **filters) if data["cursor"] else None,
        "here": request.get_full_path(),
        "bulk_actions": actions.BULK_ACTIONS,
    })


@require_GET
@console_page
def task_detail(request: ConsoleRequest, task_id: int) -> HttpResponse:
    context = queries.review_task_in_context(user=request.user, task_id=task_id)
    task = context["task"]
    claimed_by = task["claimed_by"]
    here = request.get_full_path()
    depth = context["comment"]["depth"]
    context["replies"] = [dict(c, indent=max(1, min(c["depth"] - depth, 6))) for c in context["replies"]]
    return render(request, "moderation/task.html", {
        "nav": "queue",
        **context,
        "claimed_by_me": bool(claimed_by and claimed_by["id"] == request.user.pk),
        "claimed_by_other": bool(claimed_by and claimed_by["id"] != request.user.pk),
        "here": here,
        "back_url": _url("console:queue", site=context["site"].key, state=task["state"]),
        "sanction_form": SanctionForm(initial={"site": context["site"].key, "user": context["author_id"], "next": here}),
    })


# --- decisions and claims ------------------------------------------------------------------

_DONE = {
    "approve": lambda n: ngettext("Approved %(n)d comment.", "Approved %(n)d comments.", n),
    "reject": lambda n: ngettext("Rejected %(n)d comment.", "Rejected %(n)d comments.", n),
    "delete": lambda n: ngettext("Deleted %(n)d comment.", "Deleted %(n)d comments.", n),
    "restore": lambda n: ngettext("Restored %(n)d comment.", "Restored %(n)d comments.", n),
    "pin": lambda n: ngettext("Pinned %(n)d comment.", "Pinned %(n)d comments.", n),
    "unpin": lambda n: ngettext("Unpinned %(n)d comment.", "Unpinned %(n)d comments.", n),
    "feature": lambda n: ngettext("Featured %(n)d comment.", "Featured %(n)d comments.", n),
    "unfeature": lambda n: ngettext("Unfeatured %(n)d comment.", "Unfeatured %(n)d comments.", n),
    "shadow": lambda n: ngettext("Shadowed %(n)d comment.", "Shadowed %(n)d comments.", n),
    "dismiss": lambda n: ngettext("Dismissed the reports of %(n)d comment.", "Dismissed the reports of %(n)d comments.", n),
}


@require_POST
@console_page
def act(request: ConsoleRequest) -> HttpResponse:
    """One action on one or many comments: each goes through the claim check and the action
    service on its own, so one refusal (another site, a claimed task, a state the action
    does not apply to) leaves the others done and is reported."""
    form = ActionForm(request.POST)
    if not form.is_valid():
        if _wants_json(request):
            return _form_error(request, form)
        for error in form.non_field_errors() or [_("Invalid request.")]:
            messages.error(request, str(error))
        return redirect(_safe_next(request, request.POST.get("next"), reverse("console:queue")))
    data = form.cleaned_data
    action, results = data["action"], []
    for comment_id in data["comment"]:
        try:
            comment = actions.comment_moderate(comment_id=comment_id, actor=request.user, action=action, reason=data["reason"])
        except CommentsError as exc:
            results.append({"comment_id": comment_id, "ok": False, "code": exc.code, "status_code": exc.status, "error": exc.message})
        else:
            results.append({"comment_id": comment_id, "ok": True, "status": comment.status,
                            "pinned": comment.pinned, "featured": comment.featured})
    done = [r for r in results if r["ok"]]
    failed = [r for r in results if not r["ok"]]
    summary = _DONE[action](len(done)) % {"n": len(done)} if done else ""
    if _wants_json(request):
        status = 200 if done or not failed else failed[0]["status_code"]
        return JsonResponse({"action": action, "results": results, "message": summary}, status=status)
    if done:
        messages.success(request, summary)
    for r in failed:
        messages.error(request, _("Comment %(id)s: %(error)s") % {"id": r["comment_id"], "error": r["error"]})
    return redirect(_safe_next(request, data["next"], reverse("console:queue")))


@require_POST
@console_page
def review_task_claim(request: ConsoleRequest, task_id: int) -> HttpResponse:
    try:
        task = services.review_task_claim(task_id=task_id, moderator=request.user)
    except DomainPermissionDenied as exc:
        holder = queries.task_claim_holder(user=request.user, task_id=task_id)
        if _wants_json(request):
            return JsonResponse({"error": {"code": "permission_denied", "message": exc.message}, "claimed_by": holder}, status=403)
        messages.error(request, _("%(name)s is working on this task.") % {"name": holder["name"]} if holder else exc.message)
    else:
        if _wants_json(request):
            return JsonResponse({"id": task.pk, "claimed_by": present_user(request.user), "claim_expires_at": task.claim_expires_at})
        messages.success(request, _("The task is yours for the next few minutes."))
    return redirect(_safe_next(request, request.POST.get("next"), reverse("console:task", args=[task_id])))


@require_POST
@console_page
def review_task_release(request: ConsoleRequest, task_id: int) -> HttpResponse:
    services.review_task_release(task_id=task_id, moderator=request.user)
    if _wants_json(request):
        return JsonResponse({"id": task_id, "claimed_by": None})
    messages.success(request, _("You gave the task back."))
    return redirect(_safe_next(request, request.POST.get("next"), reverse("console:task", args=[task_id])))


def _site_page(request: ConsoleRequest, template: str, nav: str, site_key: str, *, status: int = 200, **context) -> HttpResponse:
    """A console page about one site: its tab, the site with the switch to the others, and the
    address to come back to after a form."""
    return render(request, template, {
        "nav": nav, "site": _site(request, site_key), "sites": request.console_sites, "here": request.get_full_path(),
        **context,
    }, status=status)


# --- word list -----------------------------------------------------------------------------


@console_page
def words(request: ConsoleRequest) -> HttpResponse:
    site_form = SiteForm(request.GET)
    if not site_form.is_valid():
        return _form_error(request, site_form)
    site_key = _site_key(request, site_form.cleaned_data["site"])
    form = WordForm(request.POST or None, initial={"site": site_key, "action": "block"})
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            target = None if data["site"] == WordForm.GLOBAL else _site(request, data["site"])
            try:
                services.word_create(actor=request.user, site=target, word=data["word"], action=data["action"],
                                     inside_words=data["inside_words"])
            except InvalidInput as exc:
                _add_service_errors(form, exc)
            else:
                messages.success(request, _("“%(word)s” was added.") % {"word": data["word"].strip()})
                return redirect(_url("console:words", site=site_key))
        status = 400
    cursor = site_form.cleaned_data["cursor"] or None
    page = queries.word_entries(user=request.user, site_key=site_key, limit=WORDS_PAGE, cursor=cursor)
    return _site_page(
        request, "moderation/words.html", "words", site_key, status=status, entries=page.items, form=form,
        next_url=_url("console:words", site=site_key, cursor=page.next_cursor) if page.next_cursor else None,
        first_url=_url("console:words", site=site_key) if cursor else None,
    )


@require_POST
@console_page
def word_delete(request: ConsoleRequest, word_id: int) -> HttpResponse:
    entry = queries.word_entry_by_id(word_id)
    services.word_delete(actor=request.user, entry=entry)
    messages.success(request, _("“%(word)s” was removed.") % {"word": entry.word})
    return redirect(_safe_next(request, request.POST.get("next"), reverse("console:words")))


# --- sanctions -----------------------------------------------------------------------------


@console_page
def sanctions(request: ConsoleRequest) -> HttpResponse:
    site_form = SiteForm(request.GET)
    if not site_form.is_valid():
        return _form_error(request, site_form)
    site_key = _site_key(request, site_form.cleaned_data["site"])
    form = SanctionForm(request.POST or None, initial={"site": site_key, "kind": "ban"})
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                target = queries.user_by_reference(data["user"])
                services.sanction_create(
                    actor=request.user, site=_site(request, data["site"]), user_id=target.pk, kind=data["kind"],
                    until=data["until"], reason=data["reason"],
                )
            except NotFound:
                form.add_error("user", _("No user with this id or username."))
            except InvalidInput as exc:
                _add_service_errors(form, exc, renamed={"user_id": "user"})
            else:
                messages.success(request, _("The sanction on %(name)s is in force.") % {"name": target.public_name})
                return redirect(_safe_next(request, data["next"], _url("console:sanctions", site=data["site"])))
        status = 400
    return _site_page(
        request, "moderation/sanctions.html", "sanctions", site_key, status=status,
        sanctions=queries.sanction_list(user=request.user, site_key=site_key), form=form,
    )


@require_POST
@console_page
def sanction_delete(request: ConsoleRequest, sanction_id: int) -> HttpResponse:
    sanction = queries.sanction_by_id(sanction_id)
    services.sanction_delete(actor=request.user, sanction=sanction)
    messages.success(request, _("The sanction was lifted."))
    return redirect(_safe_next(request, request.POST.get("next"), _url("console:sanctions", site=sanction.site.key)))


# --- audit log -----------------------------------------------------------------------------


@require_GET
@console_page
def audit_log(request: ConsoleRequest) -> HttpResponse:
    form = SiteForm(request.GET)
    if not form.is_valid():
        return _form_error(request, form)
    site_key = _site_key(request, form.cleaned_data["site"])
    page = queries.audit_log(user=request.user, site_key=site_key, limit=LOG_PAGE, cursor=form.cleaned_data["cursor"] or None)
    return _site_page(
        request, "moderation/log.html", "log", site_key,
        entries=page.items,
        next_url=_url("console:log", site=site_key, cursor=page.next_cursor) if page.next_cursor else None,
        first_url=_url("console:log", site=site_key) if form.cleaned_data["cursor"] else None,
    )


# --- dashboard -----------------------------------------------------------------------------


@require_GET
@console_page
def dashboard(request: ConsoleRequest) -> HttpResponse:
    form = SiteForm(request.GET)
    if not form.is_valid():
        return _form_error(request, form)
    key = form.cleaned_data["site"]
    sites = [_site(request, key)] if key else request.console_sites
    figures = queries.moderation_dashboard(user=request.user, sites=sites, days=CHART_DAYS)
    return render(request, "moderation/dashboard.html", {
        "nav": "dashboard",
        "site": sites[0] if key else None,
        "sites": request.console_sites,
        **figures,
        "decisions_chart": bar_chart([(d.day, d.decisions) for d in figures["days"]]),
        "median_chart": line_chart([(d.day, None if d.median_seconds is None else d.median_seconds / 60) for d in figures["days"]]),
        "decisions_total": sum(d.decisions for d in figures["days"]),
    })
