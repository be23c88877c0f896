"""The feeds, included at ``/feeds/`` (``config/urls.py``)."""

from django.urls import path

from . import views

urlpatterns = [
    path("sites/<slug:site_key>/comments.rss", views.SiteFeed(), name="feed-site-rss"),
    path("sites/<slug:site_key>/comments.atom", views.SiteAtomFeed(), name="feed-site-atom"),
    path("subjects/<id:subject_id>/comments.rss", views.SubjectFeed(), name="feed-subject-rss"),
    path("subjects/<id:subject_id>/comments.atom", views.SubjectAtomFeed(), name="feed-subject-atom"),
]
