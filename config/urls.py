from django.contrib import admin
from django.urls import include, path

from comments.health import healthz, readyz
from comments.views import avatar, home

# Django tries patterns in order, so the busiest come first: a like or unlike is matched at the
# first pattern of its include, not after the comments API's seventeen routes have failed.
urlpatterns = [
    path("api/v1/", include("likes.urls")),
    path("api/v1/", include("comments.api.urls")),
    path("api/v1/", include("moderation.urls")),
    path("api/v1/", include("portability.urls")),
    path("api/v1/", include("notifications.urls")),
    path("api/v1/", include("feeds.api_urls")),
    path("api/v1/", include("accounts.api_urls")),
    path("admin/", admin.site.urls),
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("avatars/<int:user_id>/<str:digest>", avatar, name="avatar"),
    path("embed/", include("comments.web_urls")),
    path("console/webhooks/", include("webhooks.console_urls")),
    path("console/", include("moderation.console_urls")),
    path("notifications/", include("notifications.web_urls")),
    path("feeds/", include("feeds.urls")),
    path("auth/", include("accounts.urls")),
    path("auth/", include("accounts.oidc.urls")),
    path("", home, name="home"),
]

handler400 = "comments.middleware.handler400"
handler403 = "comments.middleware.handler403"
handler404 = "comments.middleware.handler404"
handler500 = "comments.middleware.handler500"
