"""The webhooks page of the moderation console, included at ``/console/webhooks/``."""

from django.urls import path

from . import views

app_name = "console-webhooks"

urlpatterns = [
    path("", views.endpoints, name="endpoints"),
    path("deliveries/<id:delivery_id>/redeliver", views.delivery_redeliver, name="redeliver"),
]
