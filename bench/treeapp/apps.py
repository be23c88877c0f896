from django.apps import AppConfig


class TreeAppConfig(AppConfig):
    name = "bench.treeapp"
    label = "treeapp"
    default_auto_field = "django.db.models.BigAutoField"
