"""REST API v1 of moderation (API.md, "Reports and moderation"): thin views over the services,
actions and queries. Site moderators only (``403`` for others, ``401`` anonymous)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from comments import queries as comment_queries
from comments.api.fields import IdField, StrictBooleanField, StrictCharField
from comments.api.serializers import ClosedObjectIn, CommentOut, PageParams, UserOut
from comments.api.views import ApiView, answered_once, error_responses, query_params, validated
from comments.throttling import throttles

from . import actions, queries, services
from .models import ReportReason, SanctionKind, TaskState, WordAction

# --- serializers ---------------------------------------------------------------------------


@extend_schema_serializer(examples=[OpenApiExample("Spam", value={"reason": "spam", "detail": "A link farm"})])
class ReportIn(ClosedObjectIn):
    reason = serializers.ChoiceField(choices=ReportReason.values)
    detail = StrictCharField(max_length=1000, required=False, allow_blank=True, default="")


class ReportOut(serializers.Serializer):
    id = serializers.IntegerField()
    comment_id = serializers.IntegerField()
    reason = serializers.ChoiceField(choices=ReportReason.values)
    created_at = serializers.DateTimeField()


class QueueParams(PageParams):
    site = serializers.CharField(max_length=64)
    state = serializers.ChoiceField(choices=TaskState.values, default=TaskState.OPEN)


class SiteParams(PageParams):
    site = serializers.CharField(max_length=64)


class TaskOut(serializers.Serializer):
    id = serializers.IntegerField()
    comment = CommentOut(allow_null=True)
    reasons = serializers.ListField(child=serializers.CharField())
    priority = serializers.IntegerField()
    state = serializers.ChoiceField(choices=TaskState.values)
    claimed_by = UserOut(allow_null=True)
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)
    decision = serializers.CharField(allow_null=True)


class TaskPageOut(serializers.Serializer):
    items = TaskOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class TaskClaimOut(serializers.Serializer):
    id = serializers.IntegerField()
    claimed_by = UserOut()
    claim_expires_at = serializers.DateTimeField()


@extend_schema_serializer(examples=[OpenApiExample("Approve", value={"action": "approve", "reason": "Fine after all"})])
class ActionIn(ClosedObjectIn):
    action = serializers.ChoiceField(choices=sorted(actions.ACTIONS))
    reason = StrictCharField(max_length=1000, required=False, allow_blank=True, default="")


@extend_schema_serializer(
    examples=[
        OpenApiExample(
            "Review a word", value={"site": "demo", "word": "casino", "action": "review", "inside_words": False}
        )
    ]
)
class WordIn(ClosedObjectIn):
    site = StrictCharField(max_length=64, allow_null=True, required=False, default=None)
    word = StrictCharField(max_length=100)
    action = serializers.ChoiceField(choices=WordAction.values)
    inside_words = StrictBooleanField(required=False, default=False)


class WordOut(serializers.Serializer):
    id = serializers.IntegerField()
    site = serializers.CharField(source="site.key", allow_null=True, default=None)
    word = serializers.CharField()
    action = serializers.ChoiceField(choices=WordAction.values)
    inside_words = serializers.BooleanField()


class WordPageOut(serializers.Serializer):
    items = WordOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class WordParams(PageParams):
    site = serializers.CharField(max_length=64, required=False)


class SanctionIn(ClosedObjectIn):
    site = StrictCharField(max_length=64)
    user_id = IdField()
    kind = serializers.ChoiceField(choices=SanctionKind.values)
    until = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="in the future; null or left out: for good"
    )
    reason = StrictCharField(max_length=500, required=False, allow_blank=True, default="")


class SanctionOut(serializers.Serializer):
    id = serializers.IntegerField()
    site = serializers.CharField(source="site.key")
    user_id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=SanctionKind.values)
    until = serializers.DateTimeField(allow_null=True)
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class AuditOut(serializers.Serializer):
    id = serializers.IntegerField()
    actor = UserOut(allow_null=True)
    action = serializers.CharField()
    comment_id = serializers.IntegerField(allow_null=True)
    from_status = serializers.CharField(allow_null=True)
    to_status = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    channel = serializers.CharField(
        help_text='Where it was decided when not the console, the API or the admin: "email" (a link in a held comment\'s email), else empty.'
    )
    created_at = serializers.DateTimeField()


class AuditPageOut(serializers.Serializer):
    items = AuditOut(many=True)
    next_cursor = serializers.CharField(allow_null=True)


# --- views ---------------------------------------------------------------------------------


class ReportsView(ApiView):
    permission_classes = [IsAuthenticated]

    def get_throttles(self):
        return throttles("report")

    @extend_schema(
        request=ReportIn,
        responses={200: ReportOut, 201: ReportOut, **error_responses(400, 401, 403, 404)},
        summary="Report a comment",
    )
    def post(self, request, comment_id: int):
        """Report a comment to the site's moderators, once per reader (a repeat answers 200 with the
        first). At the site's threshold of distinct reporters a published comment is held for
        review."""
        data = validated(ReportIn, request.data)
        comment = comment_queries.comment_ref_for_viewer(comment_id=comment_id, user=request.user)

        def report() -> tuple[int, dict]:
            made, created = services.report_create(
                comment=comment, reporter=request.user, reason=data["reason"], detail=data["detail"]
            )
            return (status.HTTP_201_CREATED if created else status.HTTP_200_OK), ReportOut(made).data

        return answered_once(request, report)


class QueueView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[QueueParams],
        responses={200: TaskPageOut, **error_responses(400, 401, 403, 404)},
        summary="The review queue of a site",
    )
    def get(self, request):
        """A site's review tasks, open or done, highest priority first, then oldest, each with its
        comment as a moderator sees it and why it is there."""
        params = query_params(request, QueueParams)
        page = queries.review_queue(
            user=request.user,
            site_key=params["site"],
            state=params["state"],
            limit=params["limit"],
            cursor=params.get("cursor"),
        )
        return Response({"items": page.items, "next_cursor": page.next_cursor})


class TaskClaimView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=None,
        responses={200: TaskClaimOut, **error_responses(401, 403, 404)},
        summary="Claim a review task for a while",
    )
    def put(self, request, task_id: int):
        """Claim an open review task for ``MODERATION_CLAIM_SECONDS``, so no other moderator acts
        on its comment meanwhile (their actions on it are 403); claiming it again renews the
        claim. Answers the task's id, its holder and when the claim runs out. 403 while another
        moderator's claim runs, for a closed task and for a task of a site you do not moderate;
        404 for an unknown task."""
        task = services.review_task_claim(task_id=task_id, moderator=request.user)
        return Response(
            {
                "id": task.pk,
                "claimed_by": comment_queries.present_user(request.user),
                "claim_expires_at": task.claim_expires_at,
            }
        )

    @extend_schema(
        request=None, responses={204: None, **error_responses(401, 403, 404)}, summary="Give a claimed task back"
    )
    def delete(self, request, task_id: int):
        """Give a claimed task back before its claim runs out; a task you do not hold is left as
        it is (still 204)."""
        services.review_task_release(task_id=task_id, moderator=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class CommentActionView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=ActionIn,
        responses={200: CommentOut, **error_responses(400, 401, 403, 404)},
        summary="Take a moderator action on a comment",
    )
    def post(self, request, comment_id: int):
        """A moderator's decision on a comment: approve, reject, delete, restore, pin, unpin,
        feature, unfeature, shadow, or dismiss its reports. Closes the comment's open review tasks
        and writes one audit entry; refused while another moderator holds its task."""
        data = validated(ActionIn, request.data)
        actions.comment_moderate(
            comment_id=comment_id, actor=request.user, action=data["action"], reason=data["reason"]
        )
        comment, viewer = comment_queries.comment_for_viewer(comment_id=comment_id, user=request.user)
        return Response(comment_queries.present_comments(rows=[comment], viewer=viewer)[comment.pk])


class WordsView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[WordParams],
        responses={200: WordPageOut, **error_responses(400, 401, 403, 404)},
        summary="Word list entries, oldest first",
    )
    def get(self, request):
        """The word list that applies to a site (its own entries and every site's), or without
        ``site`` the list of every site (staff)."""
        params = query_params(request, WordParams)
        page = queries.word_entries(
            user=request.user, site_key=params.get("site"), limit=params["limit"], cursor=params.get("cursor")
        )
        return Response({"items": WordOut(page.items, many=True).data, "next_cursor": page.next_cursor})

    @extend_schema(
        request=WordIn,
        responses={201: WordOut, **error_responses(400, 401, 403, 404)},
        summary="Add a word (site null: every site, staff only)",
    )
    def post(self, request):
        """Add a word to a site's list, or with ``site`` null to every site's (staff): ``block``
        refuses comments with it, ``review`` holds them, ``mask`` stars it out. Audited; the last
        day's comments are checked against it."""
        data = validated(WordIn, request.data)
        site = comment_queries.site_by_key(site_key=data["site"]) if data["site"] is not None else None
        entry = services.word_create(
            actor=request.user, site=site, word=data["word"], action=data["action"], inside_words=data["inside_words"]
        )
        return Response(WordOut(entry).data, status=status.HTTP_201_CREATED)


class WordDetailView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={204: None, **error_responses(401, 403, 404)}, summary="Remove a word")
    def delete(self, request, word_id: int):
        """Remove a word from its list (audited)."""
        services.word_delete(actor=request.user, entry=queries.word_entry_by_id(word_id=word_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SanctionsView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=SanctionIn,
        responses={201: SanctionOut, **error_responses(400, 401, 403, 404)},
        summary="Ban, shadow-ban or trust a user on a site",
    )
    def post(self, request):
        """Ban (no posts, edits, likes or reports), shadow-ban (new comments seen only by their
        author) or trust (no pre-moderation or spam review) a user on one site, until a time or for
        good. Audited."""
        data = validated(SanctionIn, request.data)
        site = comment_queries.site_by_key(site_key=data["site"])
        sanction = services.sanction_create(
            actor=request.user,
            site=site,
            user_id=data["user_id"],
            kind=data["kind"],
            until=data["until"],
            reason=data["reason"],
        )
        return Response(SanctionOut(sanction).data, status=status.HTTP_201_CREATED)


class SanctionDetailView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses={204: None, **error_responses(401, 403, 404)}, summary="Lift a sanction")
    def delete(self, request, sanction_id: int):
        """Lift a sanction (audited)."""
        services.sanction_delete(actor=request.user, sanction=queries.sanction_by_id(sanction_id=sanction_id))
        return Response(status=status.HTTP_204_NO_CONTENT)


class AuditLogView(ApiView):
    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[SiteParams],
        responses={200: AuditPageOut, **error_responses(400, 401, 403, 404)},
        summary="The audit log of a site",
    )
    def get(self, request):
        """A site's audit entries, newest first: every moderator decision and system hold, with the
        status before and after."""
        params = query_params(request, SiteParams)
        page = queries.audit_log(
            user=request.user, site_key=params["site"], limit=params["limit"], cursor=params.get("cursor")
        )
        return Response({"items": page.items, "next_cursor": page.next_cursor})
