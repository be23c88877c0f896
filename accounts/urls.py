"""The sign-in window's pages, included at ``auth/``."""

from django.urls import path

from . import views
from .oidc import views as oidc_views

app_name = "accounts"

urlpatterns = [
    path("", views.start, name="start"),
    path("handoff", views.handoff, name="handoff"),
    path("email", views.email, name="email"),
    path("email/link", views.email_link, name="email-link"),
    path("with/<slug:provider>", oidc_views.start, name="oidc-start"),
]
