from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from . import views

urlpatterns = [
    path("auth/token", views.TokenView.as_view(), name="auth-token"),
    path("auth/sso", views.SsoView.as_view(), name="auth-sso"),
    path("auth/csrf", views.CsrfView.as_view(), name="auth-csrf"),
    path("me", views.MeView.as_view(), name="me"),
    path("sites/<slug:site_key>/signin", views.SiteSigninView.as_view(), name="site-signin"),
    path("subjects", views.SubjectsView.as_view(), name="subjects"),
    path("subjects/lookup", views.SubjectLookupView.as_view(), name="subject-lookup"),
    path("subjects/<id:subject_id>", views.SubjectDetailView.as_view(), name="subject-detail"),
    path("subjects/<id:subject_id>/comments", views.SubjectCommentsView.as_view(), name="subject-comments"),
    path("counts", views.CountsView.as_view(), name="counts"),
    path("comments/<id:comment_id>", views.CommentDetailView.as_view(), name="comment-detail"),
    path("comments/<id:comment_id>/replies", views.CommentRepliesView.as_view(), name="comment-replies"),
    path("comments/<id:comment_id>/chain", views.CommentChainView.as_view(), name="comment-chain"),
    path("comments/<id:comment_id>/tree", views.CommentTreeView.as_view(), name="comment-tree"),
    path("users/<id:user_id>/comments", views.UserCommentsView.as_view(), name="user-comments"),
    path("users/<id:user_id>/follow", views.FollowView.as_view(), name="user-follow"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
]
