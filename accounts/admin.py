"""Admin of sign-in: verified email addresses and the links sent (read only: they change by
signing in)."""

from django.contrib import admin

from comments.admin import ReadOnlyAdmin

from .models import EmailAccount, EmailLink, Guest


@admin.register(EmailAccount)
class EmailAccountAdmin(ReadOnlyAdmin):
    list_display = ("email", "user", "verified_at")
    search_fields = ("email", "user__username", "user__display_name")


@admin.register(EmailLink)
class EmailLinkAdmin(ReadOnlyAdmin):
    list_display = ("email", "site", "created_at", "expires_at", "used_at")
    list_filter = ("site",)
    search_fields = ("email",)
    exclude = ("link_hash", "browser_hash")


@admin.register(Guest)
class GuestAdmin(ReadOnlyAdmin):
    """Guests and the addresses they gave (never shown to readers)."""

    list_display = ("user", "site", "email", "created_at")
    list_filter = ("site",)
    search_fields = ("email", "user__display_name")
