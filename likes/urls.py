from django.urls import path

import comments.api.urls  # noqa: F401  (registers the "id" path converter)

from . import api

urlpatterns = [
    path("comments/<id:comment_id>/like", api.LikeView.as_view(), name="comment-like"),
    path("comments/<id:comment_id>/likers", api.LikersView.as_view(), name="comment-likers"),
]
