from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo: ``seed_demo`` (a demo site's discussions, users, likes and a review queue, through
    every app's services), ``rundemo`` and ``demo_host`` (a customer's blog on another origin
    embedding the widget). A leaf: it may import every app, none imports it."""

    name = "demo"
    default_auto_field = "django.db.models.BigAutoField"
