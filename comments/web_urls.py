"""The widget's pages, included at ``embed/`` (issue 5)."""

from django.urls import path

from . import fragments, views

app_name = "comments-web"

urlpatterns = [
    path("", views.embed, name="embed"),
    path("fragments/comments", fragments.fragment_comments, name="fragment-comments"),
    path("fragments/comments/<id:comment_id>", fragments.fragment_comment, name="fragment-comment"),
    path("fragments/comments/<id:comment_id>/replies", fragments.fragment_replies, name="fragment-replies"),
    path("fragments/comments/<id:comment_id>/chain", fragments.fragment_chain, name="fragment-chain"),
]
