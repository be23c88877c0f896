"""Admin for webhooks: endpoints made through the service (a checked URL, a new secret) and the
delivery log, read-only, with redelivery."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages

from comments.exceptions import InvalidInput

from . import services, tasks
from .models import Delivery, Endpoint, EventType


class EndpointForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https")
    events = forms.MultipleChoiceField(choices=EventType.choices, widget=forms.CheckboxSelectMultiple)

    class Meta:
        model = Endpoint
        fields = ("site", "url", "events", "description", "active")

    def clean_url(self):
        try:
            return services.endpoint_url_check(self.cleaned_data["url"])
        except InvalidInput as exc:
            raise forms.ValidationError(exc.fields["url"]) from None  # type: ignore[index]  # the check names the field


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    form = EndpointForm
    list_display = ("url", "site", "active", "events", "created_at")
    list_filter = ("active", "site")
    search_fields = ("url", "description")
    readonly_fields = ("secret", "created_at")

    def save_model(self, request, obj, form, change):
        if change:
            obj.save()
            return
        data = form.cleaned_data
        obj.pk = services.endpoint_create(
            site=data["site"], url=data["url"], events=data["events"], description=data["description"]
        ).pk
        obj.active = data["active"]
        if not obj.active:
            Endpoint.objects.filter(pk=obj.pk).update(active=False)


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "event_type",
        "endpoint",
        "state",
        "attempts",
        "response_code",
        "last_attempt_at",
        "next_attempt_at",
    )
    list_filter = ("state", "event_type", "endpoint__site")
    search_fields = ("event_id", "endpoint__url")
    list_select_related = ("endpoint",)
    actions = ("redeliver_selected",)

    def get_readonly_fields(self, request, obj=None):
        return [f.name for f in Delivery._meta.fields]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Redeliver the selected deliveries")
    def redeliver_selected(self, request, queryset):
        count = tasks.redeliver(list(queryset))
        self.message_user(request, f"{count} deliveries are on their way again.", messages.SUCCESS)
