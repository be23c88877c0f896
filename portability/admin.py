"""Admin of data in and out: imports by upload (each run kept with its summary), each site's
erasure setting, and, on every user, "download their data" and "erase their data"."""

from __future__ import annotations

import os
import tempfile

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.http import HttpResponseRedirect, StreamingHttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html_join

from comments.admin import ReadOnlyAdmin
from comments.admin import UserAdmin as CommentsUserAdmin
from comments.models import Site, User

from . import queries, services
from .formats import FormatError
from .keys import ImportOptions, KeyFrom, OptionError
from .models import ImportFormat, ImportRun, SitePrivacy


class ImportForm(forms.Form):
    site = forms.ModelChoiceField(queryset=Site.objects.order_by("key"))
    format = forms.ChoiceField(choices=ImportFormat.choices)
    file = forms.FileField(
        help_text="The export as the other system gives it (.gz too, but Isso's database). Big files: use the import_comments command."
    )
    map_url = forms.CharField(
        label="Move URLs",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text="One OLD=NEW a line, as the command's --map-url: an OLD ending with / moves every URL under it "
        "(the longest wins), else one URL; NEW is an http(s) URL.",
    )
    key_from = forms.ChoiceField(
        label="Keys from",
        required=False,
        choices=[
            ("", "the identifier where the site named the page, else the URL's path (default)"),
            (KeyFrom.PATH, "the URL's path (the widget's default key)"),
            (KeyFrom.URL, "the whole URL"),
            (KeyFrom.ID, "the thread's id in the source"),
        ],
    )

    def clean(self):
        data = super().clean() or {}
        try:
            data["options"] = ImportOptions.parse(
                map_url=(data.get("map_url") or "").splitlines(), key_from=data.get("key_from") or None
            )
        except OptionError as exc:
            self.add_error("map_url", str(exc))
        return data


@admin.register(ImportRun)
class ImportRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "site", "format", "source_name", "state", "imported", "skipped", "started_by", "created_at")
    list_filter = ("state", "format", "site")
    fields = (
        "site",
        "format",
        "source_name",
        "how",
        "state",
        "started_by",
        "created_at",
        "finished_at",
        "report",
        "error",
    )
    readonly_fields = fields

    @admin.display(description="imported")
    def imported(self, run):
        return run.summary.get("imported", "")

    @admin.display(description="skipped")
    def skipped(self, run):
        return sum(run.summary.get("skipped", {}).values()) if run.summary else ""

    @admin.display(description="options")
    def how(self, run):
        rules = run.options.get("map_url") or []
        key_from = run.options.get("key_from") or "default"
        return format_html_join(
            "", "<div>{}</div>", [(f"keys from: {key_from}",), *((f"--map-url {r}",) for r in rules)]
        )

    @admin.display(description="summary")
    def report(self, run):
        return format_html_join("", "<div>{}</div>", ((line,) for line in _summary_lines(run.summary)))

    def has_add_permission(self, request):
        return admin.ModelAdmin.has_add_permission(self, request)  # "add" is the upload

    def add_view(self, request, form_url="", extra_context=None):
        """The upload: the file is imported at once, and its run shown."""
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            with _as_file(upload) as path:
                try:
                    summary = services.import_file(
                        site=form.cleaned_data["site"],
                        format=form.cleaned_data["format"],
                        path=path,
                        actor=request.user,
                        source_name=upload.name,
                        options=form.cleaned_data["options"],
                    )
                except (FormatError, services.ImportBusy) as exc:
                    self.message_user(request, f"Nothing imported: {exc}", messages.ERROR)
                    return TemplateResponse(request, "portability/admin/import_form.html", self._context(request, form))
            self.message_user(
                request, f"Imported {summary.imported:,} comments: see the summary below.", messages.SUCCESS
            )
            return HttpResponseRedirect(reverse("admin:portability_importrun_change", args=[summary.run_id]))
        return TemplateResponse(request, "portability/admin/import_form.html", self._context(request, form))

    def _context(self, request, form):
        return {
            **self.admin_site.each_context(request),
            "form": form,
            "opts": self.model._meta,
            "title": "Import comments",
        }


def _summary_lines(summary: dict) -> list[str]:
    if not summary:
        return []
    lines = [
        f"{summary.get('imported', 0):,} comments imported: {summary.get('comments', {})}",
        f"subjects: {summary.get('subjects', {})}",
    ]
    lines += [
        f"skipped {n:,}: {reason} {summary.get('examples', {}).get(reason, '')}"
        for reason, n in summary.get("skipped", {}).items()
    ]
    lines += [f"imported with a change {n:,}: {reason}" for reason, n in summary.get("notes", {}).items()]
    lines += [
        f"imported before, left as it is {n:,}: {reason} {summary.get('examples', {}).get(reason, '')}"
        for reason, n in summary.get("kept", {}).items()
    ]
    return lines


class _as_file:
    """An upload as a file on disk (the readers stream from a path; Isso's is a database)."""

    def __init__(self, upload):
        self.upload = upload
        self.copy = None

    def __enter__(self) -> str:
        if hasattr(self.upload, "temporary_file_path"):
            return self.upload.temporary_file_path()
        handle, self.copy = tempfile.mkstemp(prefix="import-")
        with os.fdopen(handle, "wb") as out:
            for chunk in self.upload.chunks():
                out.write(chunk)
        return self.copy

    def __exit__(self, *exc):
        if self.copy:
            os.unlink(self.copy)


@admin.register(SitePrivacy)
class SitePrivacyAdmin(admin.ModelAdmin):
    list_display = ("site", "erasure")
    list_filter = ("erasure",)


admin.site.unregister(User)


@admin.register(User)
class UserAdmin(CommentsUserAdmin):
    actions = ["download_data", "erase_data"]

    @admin.action(description="Download the selected user's data (JSON)")
    def download_data(self, request, queryset):
        if queryset.count() != 1:
            self.message_user(request, "Select exactly one user to download their data.", messages.ERROR)
            return None
        user = queryset.get()
        services.user_data_exported(user=user, actor=request.user)
        response = StreamingHttpResponse(queries.user_data_export(user=user), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="user-{user.pk}-data.json"'
        return response

    @admin.action(description="Erase the selected users' data and close their accounts")
    def erase_data(self, request, queryset):
        if request.POST.get("confirmed") != "yes":
            return TemplateResponse(
                request,
                "portability/admin/erase_confirm.html",
                {
                    **self.admin_site.each_context(request),
                    "users": queryset,
                    "opts": self.model._meta,
                    "title": "Erase users' data",
                    "action_checkbox_name": ACTION_CHECKBOX_NAME,
                },
            )
        for user in queryset:
            services.user_erase(user=user, actor=request.user)
        self.message_user(request, f"Erased the data of {queryset.count()} user(s).", messages.SUCCESS)
        return None
