"""Fixtures of the sign-in tests with the test provider: the provider itself (one per test
session, beside the live server whose callbacks its client allows) and the service configured
with it as ``test`` (and as ``wrong-secret``, the same provider with a secret it refuses)."""

from __future__ import annotations

import pytest

from . import provider as test_provider

PROVIDER_NAME = "Test ID"


@pytest.fixture(scope="session")
def oidc_provider(live_server):
    started = test_provider.start(
        [
            f"{live_server.url}/auth/oidc/test/login/callback/",
            f"{live_server.url}/auth/oidc/wrong-secret/login/callback/",
        ]
    )
    yield started
    test_provider.stop(started)


@pytest.fixture
def oidc_providers(settings, oidc_provider):
    """ACCOUNTS_OIDC_PROVIDERS as config/env.py makes it of ACCOUNTS_OIDC=test,wrong-secret."""
    common = {"kind": "oidc", "client_id": test_provider.CLIENT_ID, "discovery_url": oidc_provider.discovery_url}
    settings.ACCOUNTS_OIDC_PROVIDERS = {
        "test": {**common, "name": PROVIDER_NAME, "secret": test_provider.SECRET},
        "wrong-secret": {**common, "name": "Wrong secret", "secret": "not-the-secret"},
    }
    return oidc_provider
