from django.apps import AppConfig


class CommentsConfig(AppConfig):
    name = "comments"
    default_auto_field = "django.db.models.BigAutoField"
