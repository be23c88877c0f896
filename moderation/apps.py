from django.apps import AppConfig


class ModerationConfig(AppConfig):
    name = "moderation"
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
