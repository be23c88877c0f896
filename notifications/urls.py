from django.urls import path

from . import api

urlpatterns = [
    path("notifications", api.InboxView.as_view(), name="notifications"),
    path("notifications/unread_count", api.UnreadCountView.as_view(), name="notifications-unread"),
    path("notifications/read_all", api.ReadAllView.as_view(), name="notifications-read-all"),
    path("notifications/preferences", api.PreferencesView.as_view(), name="notifications-preferences"),
    path("notifications/email", api.EmailAddressView.as_view(), name="notifications-email"),
    path("notifications/<id:notification_id>/read", api.ReadView.as_view(), name="notification-read"),
    path("subjects/<id:subject_id>/subscription", api.SubscriptionView.as_view(), name="subject-subscription"),
    path("sites/<slug:site_key>/moderator_emails", api.SiteModeratorEmailView.as_view(), name="site-moderator-emails"),
]
