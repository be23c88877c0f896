from django.apps import AppConfig


class PortabilityConfig(AppConfig):
    """Data in and out: importing a site's history from other comment systems, exporting a
    site, and a user's own data (export and erasure)."""

    name = "portability"
    default_auto_field = "django.db.models.BigAutoField"
