from django.contrib import admin

from .models import Like, StaleLikeState


class ReadOnlyAdmin(admin.ModelAdmin):
    """Likes change only through ``likes.services`` (rows, counts and Redis move together), so
    the admin shows them and changes nothing."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


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
