"""allauth's hooks, pointed at the sign-in window (settings.SOCIALACCOUNT_ADAPTER)."""

from __future__ import annotations

from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.providers.base.constants import AuthError

from comments.exceptions import CommentsError
from comments.views import reader_language

from . import providers, views
from .exceptions import ProviderFailed, SignInRefused, SignInUnchecked


class SignInAdapter(DefaultSocialAccountAdapter):
    def list_apps(self, request, provider=None, client_id=None):
        """The configured providers (ACCOUNTS_OIDC_PROVIDERS), never SocialApp rows."""
        apps = providers.social_apps()
        return [
            app
            for app in apps
            if (provider is None or provider in (app.provider, app.provider_id))
            and (client_id is None or app.client_id == client_id)
        ]

    def pre_social_login(self, request, sociallogin):
        """Every successful answer of a provider ends here, in the window: signed in with a
        bearer token, or told why not. allauth's own login (a Django session) never runs."""
        raise ImmediateHttpResponse(views.finish(request, sociallogin))

    def on_authentication_error(self, request, provider, error=None, exception=None, extra_context=None):
        """A refused consent, an error of the provider, an answer that did not check out, or
        one with no state of a sign-in this window started: a page that says which."""
        state = (extra_context or {}).get("state")
        data = (state or {}).get("data") or {}
        lang = reader_language(request, data.get("lang"))
        key = getattr(provider, "sub_id", "")
        problem: CommentsError
        if state is None:
            problem = SignInUnchecked()
        elif error == AuthError.CANCELLED:
            problem = SignInRefused()
        else:
            problem = ProviderFailed()
        raise ImmediateHttpResponse(views.failure(request, problem, provider=key, lang=lang))
