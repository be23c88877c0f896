from django.apps import AppConfig


class CommentsConfig(AppConfig):
    name = "comments"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured
        from django.urls import register_converter

        from . import paths
        from .api import schema  # noqa: F401  (registers the OpenAPI extensions)
        from .urlconverters import IdConverter

        register_converter(IdConverter, "id")  # "<id:...>" in every app's URLs
        _drop_cached_sites_when_saved()
        if not 1 <= settings.COMMENTS_MAX_DEPTH <= paths.MAX_DEPTH_SUPPORTED:
            raise ImproperlyConfigured(f"COMMENTS_MAX_DEPTH must be between 1 and {paths.MAX_DEPTH_SUPPORTED}")


def _drop_cached_sites_when_saved() -> None:
    """Sites are written by the admin, ``create_site`` and the shell, not by one service, so
    the cached row of a site goes on every save or delete of the model (and on commit again,
    in case a reader cached it from the rows as they were before)."""
    from django.db import transaction
    from django.db.models.signals import post_delete, post_save

    from . import pagecache
    from .models import Site

    def changed(sender, instance, **kwargs):
        pagecache.site_changed(instance.key)
        transaction.on_commit(lambda: pagecache.site_changed(instance.key))

    post_save.connect(changed, sender=Site, dispatch_uid="comments.site_changed.save", weak=False)
    post_delete.connect(changed, sender=Site, dispatch_uid="comments.site_changed.delete", weak=False)
