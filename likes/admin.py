from django.contrib import admin

from .models import Like


@admin.register(Like)
class LikeAdmin(admin.ModelAdmin):
    list_display = ("comment_id", "user", "subject_id", "created_at")
    search_fields = ("=comment__id", "user__username")
    raw_id_fields = ("comment", "user")
    list_select_related = ("user",)
