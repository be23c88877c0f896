from django.apps import AppConfig

from infra.citus import Tables


class NotificationsConfig(AppConfig):
    name = "notifications"
    citus_tables = Tables(
        distributed={"notifications_subscription": ("subject_id", "comment_subject")},
        local=frozenset(
            {"notifications_notification", "notifications_preferences", "notifications_sitemoderatoremail"}
        ),
    )
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from comments import hooks

        from . import receivers

        # The bell in the widget, beside the reader's name.
        hooks.register_widget_part(
            hooks.WidgetPart(place="user", template="notifications/_badge.html", script="comments/notifications.js")
        )
        hooks.comment_posted.connect(receivers.comment_posted, dispatch_uid="notifications.posted")
        hooks.comment_edited.connect(receivers.comment_edited, dispatch_uid="notifications.edited")
        hooks.comment_status_changed.connect(
            receivers.comment_status_changed, dispatch_uid="notifications.status_changed"
        )
