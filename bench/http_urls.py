"""The URLs of ``bench.http``'s server: the application's (with ``bench/likes_urls.py``'s
authenticated empty view, the floor of writes) plus two more empty views, the floors of reads:

- ``/bench/empty``: a plain Django view returning an empty body (the widget page's floor);
- ``/api/v1/bench/empty-anonymous``: an anonymous DRF view (the API's base class, its
  authentication classes and renderer) returning ``{}`` (the API reads' floor).

What a measured view costs beyond its floor is its own work: routing, middleware, the
connection health check and, for the DRF floor, DRF's dispatch are in both."""

from django.http import HttpResponse
from django.urls import path
from rest_framework.response import Response

from bench.likes_urls import urlpatterns as likes_bench_urls
from comments.api.views import ApiView
from config.urls import handler400, handler403, handler404, handler500  # noqa: F401

DJANGO_EMPTY_PATH = "/bench/empty"
DRF_EMPTY_PATH = "/api/v1/bench/empty-anonymous"


def empty(request):
    return HttpResponse(b"")


class EmptyAnonymousView(ApiView):
    def get(self, request):
        return Response({})


urlpatterns = [
    path(DJANGO_EMPTY_PATH.lstrip("/"), empty, name="bench-empty-django"),
    path(DRF_EMPTY_PATH.lstrip("/"), EmptyAnonymousView.as_view(), name="bench-empty-anonymous"),
    *likes_bench_urls,
]
