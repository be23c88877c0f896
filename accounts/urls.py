"""The sign-in window's pages, included at ``auth/``."""

from django.urls import path

from . import views

app_name = "accounts"

urlpatterns = [
    path("", views.start, name="start"),
    path("email", views.email, name="email"),
    path("email/link", views.email_link, name="email-link"),
]
