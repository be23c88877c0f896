"""The application's URLs plus ``/api/v1/bench/empty``: an authenticated DRF view that does
nothing, the baseline of ``bench.likes``'s throughput comparison and ``bench.http``'s floor of
writes (likes with PUT/DELETE, posts with POST). It has the like endpoint's authentication
classes and permission, so both pay for the same middleware, bearer-token lookup and DRF
dispatch; what the like endpoint costs beyond that is its own work."""

from django.urls import path
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from comments.api.views import ApiView
from config.urls import handler400, handler403, handler404, handler500  # noqa: F401
from config.urls import urlpatterns as application_urls
from likes.api import LikeView

EMPTY_PATH = "/api/v1/bench/empty"


class EmptyView(ApiView):
    authentication_classes = LikeView.authentication_classes
    permission_classes = [IsAuthenticated]

    def put(self, request):
        return Response({})

    delete = post = put


urlpatterns = [path(EMPTY_PATH.lstrip("/"), EmptyView.as_view(), name="bench-empty"), *application_urls]
