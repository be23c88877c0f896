from django.urls import path

from . import views

urlpatterns = [
    path("unsubscribe", views.unsubscribe, name="notifications-unsubscribe"),
    path("decide", views.held_decision, name="notifications-decide"),
]
