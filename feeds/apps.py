from django.apps import AppConfig


class FeedsConfig(AppConfig):
    name = "feeds"
    default_auto_field = "django.db.models.BigAutoField"
