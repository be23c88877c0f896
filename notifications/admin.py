"""Admin of notifications: how each site's moderators are emailed about held comments."""

from django.contrib import admin

from .models import SiteModeratorEmail


@admin.register(SiteModeratorEmail)
class SiteModeratorEmailAdmin(admin.ModelAdmin):
    list_display = ("site", "held", "held_per_day")
    list_filter = ("held",)
    autocomplete_fields = ("site",)
