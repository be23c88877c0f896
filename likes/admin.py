from django.contrib import admin

from comments.admin import ReadOnlyAdmin

from .models import Like, StaleLikeState


@admin.register(Like)
class LikeAdmin(ReadOnlyAdmin):
    list_display = ("comment_id", "user", "subject_id", "active", "created_at", "version")
    list_filter = ("active",)
    search_fields = ("=comment__id", "=subject_id", "user__username")
    raw_id_fields = ("comment", "user")
    list_select_related = ("user",)
    show_full_result_count = False  # counting millions of rows on every page is not worth it


@admin.register(StaleLikeState)
class StaleLikeStateAdmin(ReadOnlyAdmin):
    list_display = ("comment_id", "subject_id", "created_at")
