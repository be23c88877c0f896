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

from axes.helpers import get_cool_off
from django.contrib import admin, messages
from django.contrib.auth import views as auth_views
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse, reverse_lazy
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from comments.api.errors import json_error
from comments.exceptions import CommentsError, InvalidInput, NotFound
from comments.exceptions import PermissionDenied as DomainPermissionDenied
from comments.queries import present_user

from . import actions, queries, services
from .charts import bar_chart, line_chart
from .console import (
    ConsoleRequest,
    add_service_errors,
    console_page,
    console_site,
    console_url,
    form_error,
    safe_next,
    site_key_for,
    site_page,
    wants_json,
)
from .forms import ActionForm, QueueFilterForm, SanctionForm, SiteForm, WordForm
from .models import TaskState

QUEUE_PAGE = 25
LOG_PAGE = 50
WORDS_PAGE = 100
CHART_DAYS = 14


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


def signin_locked_out(request, original_response=None, credentials=None) -> HttpResponse:
    """django-axes' answer (``AXES_LOCKOUT_CALLABLE``) to a login of a username that failed too
    often from the client's address: a page in the look of the form it came from (the admin's
    or the console's), or the API's JSON under ``/api/``; 429 with the cool-off either way.
    It says nothing of whether the password was right: it was not checked."""
    cool_off = get_cool_off(request)
    seconds = int(cool_off.total_seconds()) if cool_off else 0
    minutes = max(1, -(-seconds // 60))
    if request.path.startswith("/api/"):
        response: HttpResponse = json_error(
            "rate_limited", _("Too many failed sign-ins from your address; try again later."), 429
        )
    elif request.path.startswith(reverse("admin:index")):
        context = {**admin.site.each_context(request), "title": _("Sign-in paused"), "minutes": minutes}
        response = render(request, "admin/locked_out.html", context, status=429)
    else:
        response = render(request, "moderation/locked_out.html", {"minutes": minutes}, status=429)
    if seconds:
        response["Retry-After"] = str(seconds)
    return response


# --- the queue -----------------------------------------------------------------------------


@require_GET
@console_page
def queue(request: ConsoleRequest) -> HttpResponse:
    form = QueueFilterForm(request.GET)
    if not form.is_valid():
        return form_error(request, form)
    data = form.cleaned_data
    site_key = site_key_for(request, data["site"])
    state = data["state"] or TaskState.OPEN
    page = queries.review_queue(
        user=request.user,
        site_key=site_key,
        state=state,
        limit=QUEUE_PAGE,
        cursor=data["cursor"] or None,
        reason=data["reason"] or None,
        older_than=form.older_than(),
    )
    subjects = queries.subjects_by_id(ids=(t["comment"]["subject_id"] for t in page.items if t["comment"]))
    counts = queries.open_task_counts(sites=request.console_sites)
    filters = {"site": site_key, "state": state, "reason": data["reason"], "age": data["age"]}
    return render(
        request,
        "moderation/queue.html",
        {
            "nav": "queue",
            "site": console_site(request, site_key),
            "sites": [(s, counts.get(s.pk, {}).get("open", 0)) for s in request.console_sites],
            "form": form,
            "filters": filters,
            "tasks": [
                dict(t, subject=subjects.get(t["comment"]["subject_id"]) if t["comment"] else None) for t in page.items
            ],
            "next_url": console_url("console:queue", **filters, cursor=page.next_cursor) if page.next_cursor else None,
            "first_url": console_url("console:queue", **filters) if data["cursor"] else None,
            "here": request.get_full_path(),
            "bulk_actions": actions.BULK_ACTIONS,
        },
    )


@require_GET
@console_page
def task_detail(request: ConsoleRequest, task_id: int) -> HttpResponse:
    context = queries.review_task_in_context(user=request.user, task_id=task_id)
    task = context["task"]
    claimed_by = task["claimed_by"]
    here = request.get_full_path()
    depth = context["comment"]["depth"]
    context["replies"] = [dict(c, indent=max(1, min(c["depth"] - depth, 6))) for c in context["replies"]]
    return render(
        request,
        "moderation/task.html",
        {
            "nav": "queue",
            **context,
            "claimed_by_me": bool(claimed_by and claimed_by["id"] == request.user.pk),
            "claimed_by_other": bool(claimed_by and claimed_by["id"] != request.user.pk),
            "here": here,
            "back_url": console_url("console:queue", site=context["site"].key, state=task["state"]),
            "sanction_form": SanctionForm(
                initial={"site": context["site"].key, "user": context["author_id"], "next": here}
            ),
        },
    )


# --- decisions and claims ------------------------------------------------------------------


@require_POST
@console_page
def act(request: ConsoleRequest) -> HttpResponse:
    """One action on one or many comments: each goes through the claim check and the action
    service on its own, so one refusal (another site, a claimed task, a state the action
    does not apply to) leaves the others done and is reported."""
    form = ActionForm(request.POST)
    if not form.is_valid():
        if wants_json(request):
            return form_error(request, form)
        for error in form.non_field_errors() or [_("Invalid request.")]:
            messages.error(request, str(error))
        return redirect(safe_next(request, request.POST.get("next"), reverse("console:queue")))
    data = form.cleaned_data
    action, results = data["action"], []
    for comment_id in data["comment"]:
        try:
            comment = actions.comment_moderate(
                comment_id=comment_id, actor=request.user, action=action, reason=data["reason"]
            )
        except CommentsError as exc:
            results.append(
                {
                    "comment_id": comment_id,
                    "ok": False,
                    "code": exc.code,
                    "status_code": exc.status,
                    "error": exc.message,
                }
            )
        else:
            results.append(
                {
                    "comment_id": comment_id,
                    "ok": True,
                    "status": comment.status,
                    "pinned": comment.pinned,
                    "featured": comment.featured,
                }
            )
    done = [r for r in results if r["ok"]]
    failed = [r for r in results if not r["ok"]]
    summary = actions.ACTIONS[action].done % {"n": len(done)} if done else ""
    if wants_json(request):
        status = 200 if done or not failed else failed[0]["status_code"]
        return JsonResponse({"action": action, "results": results, "message": summary}, status=status)
    if done:
        messages.success(request, summary)
    for r in failed:
        messages.error(request, _("Comment %(id)s: %(error)s") % {"id": r["comment_id"], "error": r["error"]})
    return redirect(safe_next(request, data["next"], reverse("console:queue")))


@require_POST
@console_page
def review_task_claim(request: ConsoleRequest, task_id: int) -> HttpResponse:
    try:
        task = services.review_task_claim(task_id=task_id, moderator=request.user)
    except DomainPermissionDenied as exc:
        holder = queries.task_claim_holder(user=request.user, task_id=task_id)
        if wants_json(request):
            return JsonResponse(
                {"error": {"code": "permission_denied", "message": exc.message}, "claimed_by": holder}, status=403
            )
        messages.error(
            request, _("%(name)s is working on this task.") % {"name": holder["name"]} if holder else exc.message
        )
    else:
        if wants_json(request):
            return JsonResponse(
                {"id": task.pk, "claimed_by": present_user(request.user), "claim_expires_at": task.claim_expires_at}
            )
        messages.success(request, _("The task is yours for the next few minutes."))
    return redirect(safe_next(request, request.POST.get("next"), reverse("console:task", args=[task_id])))


@require_POST
@console_page
def review_task_release(request: ConsoleRequest, task_id: int) -> HttpResponse:
    services.review_task_release(task_id=task_id, moderator=request.user)
    if wants_json(request):
        return JsonResponse({"id": task_id, "claimed_by": None})
    messages.success(request, _("You gave the task back."))
    return redirect(safe_next(request, request.POST.get("next"), reverse("console:task", args=[task_id])))


# --- word list -----------------------------------------------------------------------------


@console_page
def words(request: ConsoleRequest) -> HttpResponse:
    site_form = SiteForm(request.GET)
    if not site_form.is_valid():
        return form_error(request, site_form)
    site_key = site_key_for(request, site_form.cleaned_data["site"])
    form = WordForm(request.POST or None, initial={"site": site_key, "action": "block"})
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            target = None if data["site"] == WordForm.GLOBAL else console_site(request, data["site"])
            try:
                services.word_create(
                    actor=request.user,
                    site=target,
                    word=data["word"],
                    action=data["action"],
                    inside_words=data["inside_words"],
                )
            except InvalidInput as exc:
                add_service_errors(form, exc)
            else:
                messages.success(request, _("“%(word)s” was added.") % {"word": data["word"].strip()})
                return redirect(console_url("console:words", site=site_key))
        status = 400
    cursor = site_form.cleaned_data["cursor"] or None
    page = queries.word_entries(user=request.user, site_key=site_key, limit=WORDS_PAGE, cursor=cursor)
    return site_page(
        request,
        "moderation/words.html",
        "words",
        site_key,
        status=status,
        entries=page.items,
        form=form,
        next_url=console_url("console:words", site=site_key, cursor=page.next_cursor) if page.next_cursor else None,
        first_url=console_url("console:words", site=site_key) if cursor else None,
    )


@require_POST
@console_page
def word_delete(request: ConsoleRequest, word_id: int) -> HttpResponse:
    entry = queries.word_entry_by_id(word_id=word_id)
    services.word_delete(actor=request.user, entry=entry)
    messages.success(request, _("“%(word)s” was removed.") % {"word": entry.word})
    return redirect(safe_next(request, request.POST.get("next"), reverse("console:words")))


# --- sanctions -----------------------------------------------------------------------------


@console_page
def sanctions(request: ConsoleRequest) -> HttpResponse:
    site_form = SiteForm(request.GET)
    if not site_form.is_valid():
        return form_error(request, site_form)
    site_key = site_key_for(request, site_form.cleaned_data["site"])
    form = SanctionForm(request.POST or None, initial={"site": site_key, "kind": "ban"})
    status = 200
    if request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                target = queries.user_by_reference(reference=data["user"])
                services.sanction_create(
                    actor=request.user,
                    site=console_site(request, data["site"]),
                    user_id=target.pk,
                    kind=data["kind"],
                    until=data["until"],
                    reason=data["reason"],
                )
            except NotFound:
                form.add_error("user", _("No user with this id or username."))
            except InvalidInput as exc:
                add_service_errors(form, exc, renamed={"user_id": "user"})
            else:
                messages.success(request, _("The sanction on %(name)s is in force.") % {"name": target.public_name})
                return redirect(safe_next(request, data["next"], console_url("console:sanctions", site=data["site"])))
        status = 400
    return site_page(
        request,
        "moderation/sanctions.html",
        "sanctions",
        site_key,
        status=status,
        sanctions=queries.sanction_list(user=request.user, site_key=site_key),
        form=form,
    )


@require_POST
@console_page
def sanction_delete(request: ConsoleRequest, sanction_id: int) -> HttpResponse:
    sanction = queries.sanction_by_id(sanction_id=sanction_id)
    services.sanction_delete(actor=request.user, sanction=sanction)
    messages.success(request, _("The sanction was lifted."))
    return redirect(
        safe_next(request, request.POST.get("next"), console_url("console:sanctions", site=sanction.site.key))
    )


# --- audit log -----------------------------------------------------------------------------


@require_GET
@console_page
def audit_log(request: ConsoleRequest) -> HttpResponse:
    form = SiteForm(request.GET)
    if not form.is_valid():
        return form_error(request, form)
    site_key = site_key_for(request, form.cleaned_data["site"])
    page = queries.audit_log(
        user=request.user, site_key=site_key, limit=LOG_PAGE, cursor=form.cleaned_data["cursor"] or None
    )
    return site_page(
        request,
        "moderation/log.html",
        "log",
        site_key,
        entries=page.items,
        next_url=console_url("console:log", site=site_key, cursor=page.next_cursor) if page.next_cursor else None,
        first_url=console_url("console:log", site=site_key) if form.cleaned_data["cursor"] else None,
    )


# --- dashboard -----------------------------------------------------------------------------


@require_GET
@console_page
def dashboard(request: ConsoleRequest) -> HttpResponse:
    form = SiteForm(request.GET)
    if not form.is_valid():
        return form_error(request, form)
    key = form.cleaned_data["site"]
    sites = [console_site(request, key)] if key else request.console_sites
    figures = queries.moderation_dashboard(user=request.user, sites=sites, days=CHART_DAYS)
    return render(
        request,
        "moderation/dashboard.html",
        {
            "nav": "dashboard",
            "site": sites[0] if key else None,
            "sites": request.console_sites,
            **figures,
            "decisions_chart": bar_chart([(d.day, d.decisions) for d in figures["days"]]),
            "median_chart": line_chart(
                [(d.day, None if d.median_seconds is None else d.median_seconds / 60) for d in figures["days"]]
            ),
            "decisions_total": sum(d.decisions for d in figures["days"]),
        },
    )
