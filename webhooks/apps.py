from django.apps import AppConfig

from infra.citus import Tables


class WebhooksConfig(AppConfig):
    name = "webhooks"
    citus_tables = Tables(local=frozenset({"webhooks_endpoint", "webhooks_delivery"}))
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from comments import hooks
        from moderation import signals as moderation_signals

        from . import receivers

        hooks.comment_posted.connect(receivers.comment_posted, dispatch_uid="webhooks.posted")
        hooks.comment_edited.connect(receivers.comment_edited, dispatch_uid="webhooks.edited")
        hooks.comment_status_changed.connect(receivers.comment_status_changed, dispatch_uid="webhooks.status_changed")
        moderation_signals.report_created.connect(receivers.report_created, dispatch_uid="webhooks.report_created")
