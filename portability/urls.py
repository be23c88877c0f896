from django.urls import path

from . import api

urlpatterns = [
    path("me/data", api.MyDataView.as_view(), name="me-data"),
]
