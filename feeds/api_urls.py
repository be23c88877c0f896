from django.urls import path

from . import api

urlpatterns = [
    path("sites/<slug:site_key>/comments/recent", api.RecentCommentsView.as_view(), name="site-comments-recent"),
    path("sites/<slug:site_key>/comments/top", api.TopCommentsView.as_view(), name="site-comments-top"),
]
