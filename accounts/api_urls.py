from django.urls import path

from . import api, guest_api
from .oidc import api as oidc_api

urlpatterns = [
    path("auth/email", api.EmailLinkView.as_view(), name="auth-email"),
    path("auth/email/verify", api.EmailVerifyView.as_view(), name="auth-email-verify"),
    path("auth/session", api.SessionView.as_view(), name="auth-session"),
    path("auth/session/resume", api.SessionResumeView.as_view(), name="auth-session-resume"),
    path("auth/handoff", oidc_api.HandoffView.as_view(), name="auth-handoff"),
    path("guest/form", guest_api.GuestFormView.as_view(), name="guest-form"),
    path("guest/comments", guest_api.GuestCommentView.as_view(), name="guest-comments"),
]
