"""Admin for moderation: every change goes through the services and actions, so counters,
tasks and the audit log stay right; the audit log itself is read-only."""

from __future__ import annotations

from django.contrib import admin, messages

from comments.admin import CommentAdmin, ReadOnlyAdmin
from comments.exceptions import CommentsError
from comments.models import Comment

from . import actions, services
from .models import AuditEntry, Report, ReviewTask, Sanction, WordEntry


class ServiceAdmin(admin.ModelAdmin):
    """Rows added and removed through the services (which audit them and tell every process);
    never edited in place: remove and add again, so the audit log tells the story."""

    def create(self, request, obj):
        raise NotImplementedError

    def remove(self, request, obj) -> None:
        raise NotImplementedError

    def has_change_permission(self, request, obj=None):
        return False

    def save_model(self, request, obj, form, change):
        try:
            obj.pk = self.create(request, obj).pk
        except CommentsError as exc:
            self.message_user(request, exc.message, messages.ERROR)

    def delete_model(self, request, obj):
        self.remove(request, obj)

    def delete_queryset(self, request, queryset):
        for obj in queryset:
            self.remove(request, obj)


@admin.register(WordEntry)
class WordEntryAdmin(ServiceAdmin):
    list_display = ("word", "action", "inside_words", "site", "created_by", "created_at")
    list_filter = ("action", "inside_words", "site")
    search_fields = ("word", "normalized")
    fields = ("site", "word", "action", "inside_words")

    def create(self, request, obj):
        return services.word_create(
            actor=request.user, site=obj.site, word=obj.word, action=obj.action, inside_words=obj.inside_words
        )

    def remove(self, request, obj):
        services.word_delete(actor=request.user, entry=obj)


@admin.register(Sanction)
class SanctionAdmin(ServiceAdmin):
    list_display = ("user", "kind", "site", "until", "reason", "created_by", "created_at")
    list_filter = ("kind", "site")
    search_fields = ("user__username", "user__display_name", "reason")
    raw_id_fields = ("user",)
    fields = ("site", "user", "kind", "until", "reason")

    def create(self, request, obj):
        return services.sanction_create(
            actor=request.user, site=obj.site, user_id=obj.user_id, kind=obj.kind, until=obj.until, reason=obj.reason
        )

    def remove(self, request, obj):
        services.sanction_delete(actor=request.user, sanction=obj)


@admin.register(Report)
class ReportAdmin(admin.ModelAdmin):
    list_display = ("comment_id", "reason", "user", "created_at")
    # Named, not Django's every-foreign-key default, which joins the comment on its id alone: on
    # Citus a report meets its comment only on their subject.
    list_select_related = ("user",)
    list_filter = ("reason",)
    search_fields = ("=comment__id", "user__username", "detail")
    raw_id_fields = ("comment", "user")

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


def _moderate_each(modeladmin, request, comment_ids, action_name: str) -> None:
    """``action_name`` on each comment through moderation's actions (rules, claims, review tasks
    closed, the audit log), as the console and the API take it; a refusal is told, not raised."""
    done = 0
    for comment_id in comment_ids:
        try:
            actions.comment_moderate(comment_id=comment_id, actor=request.user, action=action_name)
            done += 1
        except CommentsError as exc:
            modeladmin.message_user(request, f"comment {comment_id}: {exc.message}", messages.WARNING)
    modeladmin.message_user(request, f"{action_name}: {done} comment(s)")


def _decide(action_name: str):
    def decide(modeladmin, request, queryset):
        _moderate_each(
            modeladmin, request, queryset.filter(state="open").values_list("comment_id", flat=True), action_name
        )

    decide.short_description = f"{action_name.capitalize()} the comments of the selected tasks"  # type: ignore[attr-defined]
    decide.__name__ = f"decide_{action_name}"
    return decide


def _moderate(action_name: str):
    def moderate(modeladmin, request, queryset):
        _moderate_each(modeladmin, request, queryset.values_list("pk", flat=True), action_name)

    moderate.short_description = f"{action_name.capitalize()} the selected comments"  # type: ignore[attr-defined]
    moderate.__name__ = f"moderate_{action_name}"
    return moderate


admin.site.unregister(Comment)


@admin.register(Comment)
class ModeratedCommentAdmin(CommentAdmin):
    """The core's comment admin with moderators' actions: once these were bare status changes
    that skipped the rules (a claimed task, an allowed transition) and wrote no audit entry."""

    actions = [
        _moderate(name)
        for name in ("approve", "reject", "delete", "restore", "shadow", "pin", "unpin", "feature", "unfeature")
    ]


@admin.register(ReviewTask)
class ReviewTaskAdmin(admin.ModelAdmin):
    list_display = ("id", "comment_id", "site", "priority", "state", "reasons", "claimed_by", "created_at", "decision")
    list_select_related = ("site", "claimed_by")  # not the comment (see ReportAdmin)
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
