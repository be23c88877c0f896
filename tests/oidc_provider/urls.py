from django.contrib.auth import views as auth_views
from django.urls import include, path

from . import coop

urlpatterns = [
    path("coop/<str:state>", coop.switch),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
