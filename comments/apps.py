from django.apps import AppConfig


class CommentsConfig(AppConfig):
    name = "comments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured

        from . import paths
        from .api import schema  # noqa: F401  (registers the OpenAPI extensions)

        if not 1 <= settings.COMMENTS_MAX_DEPTH <= paths.MAX_DEPTH_SUPPORTED:
            raise ImproperlyConfigured(f"COMMENTS_MAX_DEPTH must be between 1 and {paths.MAX_DEPTH_SUPPORTED}")
