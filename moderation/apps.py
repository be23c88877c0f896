from django.apps import AppConfig


class ModerationConfig(AppConfig):
    name = "moderation"
    default_auto_field = "django.db.models.BigAutoField"
