"""The moderation console's pages, included at ``/console/`` (``config/urls.py``)."""

from django.urls import path

from . import views

app_name = "console"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("tasks/<id:task_id>/", views.task_detail, name="task"),
    path("tasks/<id:task_id>/claim", views.review_task_claim, name="claim"),
    path("tasks/<id:task_id>/release", views.review_task_release, name="release"),
    path("actions", views.act, name="act"),
    path("words/", views.words, name="words"),
    path("words/<id:word_id>/delete", views.word_delete, name="word-delete"),
    path("sanctions/", views.sanctions, name="sanctions"),
    path("sanctions/<id:sanction_id>/delete", views.sanction_delete, name="sanction-delete"),
    path("log/", views.audit_log, name="log"),
    path("dashboard/", views.dashboard, name="dashboard"),
]
