from django.apps import AppConfig

from infra.citus import Tables


class AccountsConfig(AppConfig):
    """Sign-in on the service itself (issue 14): the popup the widget opens, email links, guests."""

    name = "accounts"
    # Read only while a reader signs in, by user or by provider account: on the coordinator,
    # django-allauth's tables (GitHub, Google and OpenID Connect providers) included.
    citus_tables = Tables(
        local=frozenset(
            {
                "accounts_emailaccount",
                "accounts_emaillink",
                "accounts_signinhandoff",
                "accounts_guest",
                "account_emailaddress",
                "account_emailconfirmation",
                "socialaccount_socialaccount",
                "socialaccount_socialapp",
                "socialaccount_socialtoken",
            }
        )
    )
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from comments import hooks

        from . import guests, receivers
        from .oidc.admin import hide_unused_allauth_pages

        # The sign-in window's opener, and the guest form where the site takes guests.
        hooks.register_widget_part(hooks.WidgetPart(script="comments/signin.js"))
        hooks.register_widget_part(
            hooks.WidgetPart(
                place="form", template="accounts/_guest_form.html", script="comments/guest.js", shown_on=guests.shown_on
            )
        )
        hooks.register_content_check(guests.guest_content_check)
        hooks.user_erasing.connect(receivers.user_erasing, dispatch_uid="accounts.user_erasing")
        hooks.user_erasing.connect(receivers.user_erasing_oidc, dispatch_uid="accounts.user_erasing_oidc")
        hooks.users_with_email.connect(receivers.users_with_email, dispatch_uid="accounts.users_with_email")
        hide_unused_allauth_pages()
