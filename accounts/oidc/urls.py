"""Where providers send the reader back (the redirect URIs to register with each), included at
``auth/`` without a namespace: allauth finds its callbacks by these names."""

from django.urls import path

from . import views

urlpatterns = [
    path("github/login/callback/", views.github_callback, name="github_callback"),
    path("oidc/<str:provider_id>/login/callback/", views.openid_connect_callback, name="openid_connect_callback"),
]
