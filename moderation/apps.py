from django.apps import AppConfig

from infra.citus import Tables


class ModerationConfig(AppConfig):
    name = "moderation"
    # Reports and review tasks with their subject's comments; the word list and sanctions, read
    # on every post, on every node; the audit log and django-axes' records of console sign-ins
    # (read at a login, by username and address) on the coordinator.
    citus_tables = Tables(
        distributed={
            "moderation_report": ("subject_id", "comment_subject"),
            "moderation_task": ("subject_id", "comment_subject"),
        },
        reference=frozenset({"moderation_word", "moderation_sanction"}),
        local=frozenset(
            {
                "moderation_audit",
                "axes_accessattempt",
                "axes_accessattemptexpiration",
                "axes_accessfailurelog",
                "axes_accesslog",
            }
        ),
    )
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from comments import hooks

        from . import checks, receivers, services, signals, wordfilter

        hooks.register_content_check(checks.check_content)
        hooks.register_participation_check(services.participation_check)
        hooks.comment_posted.connect(receivers.comment_written, dispatch_uid="moderation.posted")
        hooks.comment_edited.connect(receivers.comment_written, dispatch_uid="moderation.edited")
        signals.word_added.connect(receivers.word_added, dispatch_uid="moderation.word_added")
        # The filter's character tables, built now rather than on the first comment's request.
        wordfilter.normalize_word("x")
