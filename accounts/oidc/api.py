"""The frame takes a provider's sign-in that its window could not hand over (API.md,
"Sign-in with a provider")."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from comments.api.fields import StrictCharField
from comments.api.serializers import ClosedObjectIn
from comments.api.views import ApiView, error_responses, validated

from ..api import SignedInOut, signed_in
from . import services


class HandoffIn(ClosedObjectIn):
    secret = StrictCharField(min_length=32, max_length=200)


class HandoffOut(SignedInOut):
    via_label = serializers.CharField()


class HandoffView(ApiView):
    authentication_classes: list = []
    # Not throttled: the frame asks every few seconds while its window is out of reach, and a
    # secret of 32 random bytes is not guessed by asking often.

    @extend_schema(
        request=HandoffIn,
        responses={200: HandoffOut, 204: None, **error_responses(400, 401)},
        summary="Take a provider's sign-in",
    )
    def post(self, request):
        """The sign-in a provider's window kept for the SHA-256 of ``secret`` (the ``handoff``
        the frame gave the window): a bearer token, once. 204 while none waits (the frame asks
        again a moment later)."""
        data = validated(HandoffIn, request.data)
        taken = services.handoff_take(secret=data["secret"])
        if taken is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        raw, token, handoff = taken
        return Response({**signed_in(raw, token, handoff.via), "via_label": handoff.via_label})
