"""Admin for moderation: every change goes through the services and actions, so counters,
tasks and the audit log stay right; the audit log itself is read-only."""

from __future__ import annotations

from django.contrib import admin, messages

from comments.admin import ReadOnlyAdmin
from comments.exceptions import CommentsError

from . import actions, services
from .models import AuditEntry, Report, ReviewTask, Sanction, WordEntry


@admin.register(WordEntry)
class WordEntryAdmin(admin.ModelAdmin):
    list_display = ("word", "action", "inside_words", "site", "created_by", "created_at")
    list_filter = ("action", "inside_words", "site")
    search_fields = ("word", "normalized")
    fields = ("site", "word", "action", "inside_words")

    def save_model(self, request, obj, form, change):
        if change:
            # A word is replaced, not edited, so the automatons and the audit log follow.
            services.word_delete(actor=request.user, entry=WordEntry.objects.get(pk=obj.pk))
        try:
            created = services.word_create(actor=request.user, site=obj.site, word=obj.word, action=obj.action, inside_words=obj.inside_words)
        except CommentsError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        obj.pk = created.pk

    def delete_model(self, request, obj):
        services.word_delete(actor=request.user, entry=obj)

    def delete_queryset(self, request, queryset):
        for entry in queryset:
            services.word_delete(actor=request.user, entry=entry)


@admin.register(Sanction)
class SanctionAdmin(admin.ModelAdmin):
    list_display = ("user", "kind", "site", "until", "reason", "created_by", "created_at")
    list_filter = ("kind", "site")
    search_fields = ("user__username", "user__display_name", "reason")
    raw_id_fields = ("user",)
    fields = ("site", "user", "kind", "until", "reason")

    def has_change_permission(self, request, obj=None):
        return False  # lift and impose again, so the audit log tells the story

    def save_model(self, request, obj, form, change):
        try:
            created = services.sanction_create(actor=request.user, site=obj.site, user_id=obj.user_id, kind=obj.kind, until=obj.until, reason=obj.reason)
        except CommentsError as exc:
            self.message_user(request, exc.message, messages.ERROR)
            return
        obj.pk = created.pk

    def delete_model(self, request, obj):
        services.sanction_delete(actor=request.user, sanction=obj)

    def delete_queryset(self, request, queryset):
        for sanction in queryset:
            services.sanction_delete(actor=request.user, sanction=sanction)


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ("comment_id", "reason", "user", "created_at")
    list_filter = ("reason",)
    search_fields = ("=comment__id", "user__username", "detail")
    raw_id_fields = ("comment", "user")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


def _decide(action_name: str):
    def decide(modeladmin, request, queryset):
        done = 0
        for task in queryset.filter(state="open"):
            try:
                actions.comment_moderate(comment_id=task.comment_id, actor=request.user, action=action_name)
                done += 1
            except CommentsError as exc:
                modeladmin.message_user(request, f"comment {task.comment_id}: {exc.message}", messages.WARNING)
        modeladmin.message_user(request, f"{action_name}: {done} comment(s)")

    decide.short_description = f"{action_name.capitalize()} the comments of the selected tasks"
    decide.__name__ = f"decide_{action_name}"
    return decide


@admin.register(ReviewTask)
class ReviewTaskAdmin(admin.ModelAdmin):
    list_display = ("id", "comment_id", "site", "priority", "state", "reasons", "claimed_by", "created_at", "decision")
    list_filter = ("state", "site", "decision")
    search_fields = ("=comment__id",)
    ordering = ("-priority", "id")
    actions = [_decide("approve"), _decide("reject"), _decide("delete")]
    readonly_fields = [f.name for f in ReviewTask._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "site", "actor", "action", "comment_id", "from_status", "to_status", "reason")
    list_filter = ("action", "site")
    search_fields = ("=comment_id", "actor__username", "reason")
