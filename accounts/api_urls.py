from django.urls import path

from . import api

urlpatterns = [
    path("auth/email", api.EmailLinkView.as_view(), name="auth-email"),
    path("auth/email/verify", api.EmailVerifyView.as_view(), name="auth-email-verify"),
]
