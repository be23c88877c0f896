from django.urls import path

from . import api

urlpatterns = [
    path("comments/<id:comment_id>/like", api.LikeView.as_view(), name="comment-like"),
    path("comments/<id:comment_id>/likers", api.LikersView.as_view(), name="comment-likers"),
]
