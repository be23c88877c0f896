from django.apps import AppConfig

from infra.citus import Tables


class LikesConfig(AppConfig):
    name = "likes"
    # Likes live with their comments' subject; stale like states are a short list every flush
    # sweeps whole, on the coordinator.
    citus_tables = Tables(
        distributed={"likes_like": ("subject_id", "comment_subject")},
        local=frozenset({"likes_stalelikestate"}),
    )
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from comments import hooks

        from . import queries

        hooks.register_liked_sql(queries.liked_sql)
        hooks.register_page_like_state(queries.page_like_state)
        hooks.comment_posted.connect(_new_comment_has_no_likes, dispatch_uid="likes.new_comment")
        hooks.comment_status_changed.connect(_status_changed, dispatch_uid="likes.status_changed")
        hooks.subject_state_changed.connect(_subject_state_changed, dispatch_uid="likes.subject_state_changed")


def _new_comment_has_no_likes(
    sender, *, comment_id: int, subject_id: int, status: str, visibility: str, **kwargs
) -> None:
    from .live import sentinel_score
    from .services import like_state_mark_empty

    like_state_mark_empty(comments=[(comment_id, subject_id, sentinel_score(status=status, visibility=visibility))])


def _status_changed(sender, *, comment_id: int, subject_id: int, to_status: str, visibility: str, **kwargs) -> None:
    from .live import sentinel_score
    from .services import like_state_reflag

    like_state_reflag(
        comment_id=comment_id, subject_id=subject_id, flag=sentinel_score(status=to_status, visibility=visibility)
    )


def _subject_state_changed(sender, *, subject_id: int, state: str, **kwargs) -> None:
    from .services import like_subject_mark

    like_subject_mark(subject_id=subject_id, subject_state=state)
