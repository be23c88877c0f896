from django.urls import path

from . import api
from .oidc import api as oidc_api

urlpatterns = [
    path("auth/email", api.EmailLinkView.as_view(), name="auth-email"),
    path("auth/email/verify", api.EmailVerifyView.as_view(), name="auth-email-verify"),
    path("auth/handoff", oidc_api.HandoffView.as_view(), name="auth-handoff"),
]
