from django.apps import AppConfig

from infra.citus import Tables


class CommentsConfig(AppConfig):
    name = "comments"
    # The Citus plan (docs/citus.md). The comment tables are distributed by subject and
    # co-located, so every read or write of one subject's comments, likes, reports and review
    # tasks is a router query that one worker answers. Their primary and unique keys end in
    # ``subject_id``: Citus can only enforce a key on a shard when it holds the distribution
    # column, and with the column last the key still serves every lookup by comment id alone
    # (ids are unique by generation, ``comments.ids``). A subject is found by its site's key
    # through ``comment_subject_key``, distributed by site in a group of its own: a new page
    # writes one row, which a reference table would write on every node, and its unique
    # (site_id, key) is enforced on one shard. A new subject's id is drawn by the coordinator.
    # Django's own tables are declared here too, as the core installs them.
    citus_tables = Tables(
        distributed={
            "comment_subject": ("id", "comment_subject"),
            "comment_index": ("subject_id", "comment_subject"),
            "comment_content": ("subject_id", "comment_subject"),
            "comment_subject_key": ("site_id", "comment_subject_key"),
        },
        drawn=frozenset({"comment_subject"}),
        reference=frozenset(
            {
                "comments_site",
                "comments_site_moderators",
                "comments_user",
                "comments_user_groups",
                "comments_user_user_permissions",
                "comments_follow",
                "comments_externalidentity",
                "comments_apitoken",
                "auth_group",
                "auth_group_permissions",
                "auth_permission",
                "django_content_type",
            }
        ),
        local=frozenset(
            {
                "comments_idworkerlease",
                "comments_deferredtask",
                "comments_idempotentrequest",
                "django_admin_log",
                "django_migrations",
                "django_session",
            }
        ),
    )
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.conf import settings
        from django.core.exceptions import ImproperlyConfigured
        from django.db.models.signals import post_migrate
        from django.urls import register_converter

        from infra.citus import distribute_after_migrate

        from . import paths
        from .api import schema  # noqa: F401  (registers the OpenAPI extensions)
        from .urlconverters import IdConverter

        register_converter(IdConverter, "id")  # "<id:...>" in every app's URLs
        # On a Citus coordinator with workers, migrate distributes the tables (docs/citus.md).
        post_migrate.connect(distribute_after_migrate, sender=self, dispatch_uid="comments.citus")
        if not 1 <= settings.COMMENTS_MAX_DEPTH <= paths.MAX_DEPTH_SUPPORTED:
            raise ImproperlyConfigured(f"COMMENTS_MAX_DEPTH must be between 1 and {paths.MAX_DEPTH_SUPPORTED}")
