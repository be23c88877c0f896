"""The widget's pages, included at ``embed/`` (issue 5)."""

from django.urls import path

from . import views

app_name = "comments-web"

urlpatterns = [
    path("", views.embed, name="embed"),
    path("fragments/comments", views.fragment_comments, name="fragment-comments"),
    path("fragments/comments/<id:comment_id>", views.fragment_comment, name="fragment-comment"),
    path("fragments/comments/<id:comment_id>/replies", views.fragment_replies, name="fragment-replies"),
    path("fragments/comments/<id:comment_id>/chain", views.fragment_chain, name="fragment-chain"),
]
