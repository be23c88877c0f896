from django.urls import path

from . import api

urlpatterns = [
    path("comments/<id:comment_id>/reports", api.ReportsView.as_view(), name="comment-reports"),
    path("moderation/queue", api.QueueView.as_view(), name="moderation-queue"),
    path("moderation/tasks/<id:task_id>/claim", api.TaskClaimView.as_view(), name="moderation-task-claim"),
    path("moderation/comments/<id:comment_id>/actions", api.CommentActionView.as_view(), name="moderation-actions"),
    path("moderation/words", api.WordsView.as_view(), name="moderation-words"),
    path("moderation/words/<id:word_id>", api.WordDetailView.as_view(), name="moderation-word"),
    path("moderation/sanctions", api.SanctionsView.as_view(), name="moderation-sanctions"),
    path("moderation/sanctions/<id:sanction_id>", api.SanctionDetailView.as_view(), name="moderation-sanction"),
    path("moderation/log", api.AuditLogView.as_view(), name="moderation-log"),
]
