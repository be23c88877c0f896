"""Django admin for the comment core, usable by a moderator: comment rows show the text, the
subject and the author; filters by status, flags and site; search by text, author and id.
Moderators' actions on comments are added by the moderation app (its admin), through its rules."""

from typing import ClassVar

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from django.utils.html import format_html
from django.utils.text import Truncator

from . import origins, queries, services
from .models import ApiToken, Comment, CommentContent, ExternalIdentity, Follow, Site, Subject, User


class ReadOnlyAdmin(admin.ModelAdmin):
    """For rows that change only through services (so the counters, Redis state or audit
    trail that go with them move too): the admin shows them and changes nothing."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    # UserAdmin sets its fieldsets (django-stubs allow None).
    fieldsets = BaseUserAdmin.fieldsets + (("Public profile", {"fields": ("display_name", "avatar_url", "is_guest")}),)  # type: ignore[operator]
    list_display = ("username", "display_name", "email", "is_staff", "is_active", "is_guest", "date_joined")
    list_filter = (*BaseUserAdmin.list_filter, "is_guest")
    # Set by the guest path alone: a guest made a member here could pass as one.
    readonly_fields = ("is_guest",)
    search_fields = ("username", "display_name", "email")


class OriginListField(forms.Field):
    """``Site.allowed_origins`` as text, one origin per line; each line checked (and written as a
    browser sends it) by ``origins.parse_origin``, and every bad line named in the errors."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 60, "placeholder": origins.EXAMPLE})
    default_help_text = (
        "One origin per line: scheme://host[:port] of each page allowed to embed the widget, "
        f"e.g. {origins.EXAMPLE} or http://localhost:8001 (no path)."
    )

    def __init__(self, **kwargs):
        kwargs.setdefault("help_text", self.default_help_text)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, list):
            return "\n".join(str(origin) for origin in value)
        return value

    def to_python(self, value) -> list[str]:
        found, errors = origins.parse_origins((value or "").splitlines())
        if errors:
            raise forms.ValidationError(errors)
        return found


class SiteAdminForm(forms.ModelForm):
    allowed_origins = OriginListField(required=False, label="Allowed origins")

    class Meta:
        model = Site
        fields = "__all__"  # noqa: DJ007 - the admin edits every field of a site, new ones too

    def clean_signin_oidc(self):
        providers = self.cleaned_data.get("signin_oidc") or []
        if not isinstance(providers, list) or not all(isinstance(p, str) for p in providers):
            raise forms.ValidationError('A list of provider keys, e.g. ["github"].')
        unknown = sorted(set(providers) - set(settings.ACCOUNTS_OIDC_PROVIDERS))
        if unknown:
            raise forms.ValidationError(f"Not a provider of this service: {', '.join(unknown)}.")
        return providers


@admin.register(Site)
class SiteAdmin(admin.ModelAdmin):
    form = SiteAdminForm
    list_display = (
        "key",
        "name",
        "default_mode",
        "moderation",
        "signin_sso",
        "signin_email",
        "signin_guests",
        "guest_moderation",
        "created_at",
    )
    list_filter = ("default_mode", "moderation", "signin_sso", "signin_email", "signin_guests", "guest_moderation")
    search_fields = ("key", "name")
    filter_horizontal = ("moderators",)

    # Sites are written through the service, which drops every process's cached copy.
    def save_model(self, request, obj, form, change):
        services.site_store(site=obj)

    def delete_model(self, request, obj):
        services.site_delete(site=obj)

    def delete_queryset(self, request, queryset):
        for site in queryset:
            services.site_delete(site=site)


class SubjectAdminForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, required=False, assume_scheme="https")  # Django 6's default, now

    class Meta:
        model = Subject
        fields = "__all__"  # noqa: DJ007 - the admin edits every field of a subject, new ones too

    def clean(self):
        cleaned = super().clean() or {}
        site, key = cleaned.get("site"), cleaned.get("key")
        if self.instance._state.adding and site is not None and key and queries.subject_id_by_key(site=site, key=key):
            raise forms.ValidationError("This site already has a subject with this key.")
        return cleaned


@admin.register(Subject)
class SubjectAdmin(admin.ModelAdmin):
    form = SubjectAdminForm
    list_display = ("key", "site", "title", "mode", "state", "comment_count", "root_count", "created_at")
    list_filter = ("mode", "state", "site")
    search_fields = ("key", "title", "url")
    readonly_fields = ("comment_count", "root_count", "floor_seq", "created_at")
    list_select_related = ("site",)
    actions = ["reconcile"]

    def get_readonly_fields(self, request, obj=None):
        # The site and key name the subject for its host's pages (and its key's row): they stay.
        return (*self.readonly_fields, "site", "key") if obj is not None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        if not change:
            # Made with its key's row, as every subject is.
            services.subjects_create(obj.site, [obj])
            return
        super().save_model(request, obj, form, change)
        # A change of what readers see goes through the service too: the subject's cached pages
        # go, and a closing reaches the likes answered from Redis.
        changed = {name: getattr(obj, name) for name in ("mode", "state", "title") if name in form.changed_data}
        if change and changed:
            services.subject_update(subject=obj, actor=request.user, **changed)

    @admin.action(description="Recompute counters")
    def reconcile(self, request, queryset):
        for subject in queryset:
            services.subject_reconcile_counters(subject_id=subject.pk)
        self.message_user(request, f"Recomputed {queryset.count()} subject(s).", messages.SUCCESS)


class CommentContentInline(admin.StackedInline):
    model = CommentContent
    can_delete = False
    fields = ("body", "html_preview", "mentions", "author_ip", "user_agent")
    readonly_fields = ("html_preview", "mentions", "author_ip", "user_agent")

    @admin.display(description="Rendered")
    def html_preview(self, obj):
        return format_html("<div>{}</div>", obj.html)  # html is sanitized by nh3 at write time


@admin.register(Comment)
class CommentAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "excerpt",
        "author",
        "subject",
        "depth",
        "floor",
        "status",
        "pinned",
        "featured",
        "like_count",
        "reply_count",
        "created_at",
    )
    list_filter = ("status", "pinned", "featured", "visibility", "subject__site")
    search_fields = ("=id", "author__username", "author__display_name", "subject__key")  # and the text, below
    # The content comes by a query of its own (comment ids): joined here on the comment's id
    # alone, it would span every shard on Citus, where the two meet only on their subject.
    list_select_related = ("author", "subject")
    readonly_fields: ClassVar[tuple[str, ...]] = (
        "id",
        "subject",
        "author",
        "reply_to",
        "root",
        "path",
        "depth",
        "floor",
        "status",
        "like_count",
        "reply_count",
        "descendant_count",
        "reply_floor_seq",
        "hot_score",
        "created_at",
        "edited_at",
    )
    readonly_fields += ("visibility",)  # it changes the counters: not edited by hand
    fields = readonly_fields[:10] + ("pinned", "featured") + readonly_fields[10:]
    inlines = [CommentContentInline]
    date_hierarchy = "created_at"
    show_full_result_count = False
    # Moderator actions on selected comments come from the moderation app (moderation/admin.py),
    # which goes through its rules and audit log as the console and the API do.

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("content")

    def get_search_results(self, request, queryset, search_term):
        """The search fields' matches, and the comments whose text holds ``search_term``: the
        text is searched in its own table and its matches' ids handed to the list (on Citus a
        comment and its content join only on their subject)."""
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        if search_term:
            in_text = CommentContent.objects.filter(body__icontains=search_term).values("comment_id")
            found |= queryset.filter(pk__in=in_text)
        return found, may_have_duplicates

    @admin.display(description="Comment")
    def excerpt(self, obj):
        return Truncator(obj.content.body).chars(80) if hasattr(obj, "content") else ""

    def has_add_permission(self, request):
        return False  # comments are posted through the service, which assigns path and floor

    def has_delete_permission(self, request, obj=None):
        return False  # soft delete only: use the "deleted" action


@admin.register(Follow)
class FollowAdmin(admin.ModelAdmin):
    list_display = ("follower", "followee", "created_at")
    search_fields = ("follower__username", "followee__username")
    raw_id_fields = ("follower", "followee")


@admin.register(ExternalIdentity)
class ExternalIdentityAdmin(admin.ModelAdmin):
    list_display = ("site", "external_id", "user", "email", "created_at")
    list_filter = ("site",)
    search_fields = ("external_id", "user__username", "email")
    raw_id_fields = ("user",)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("user", "site", "created_at", "expires_at")
    search_fields = ("user__username",)
    readonly_fields = ("key_hash", "user", "site", "created_at")
