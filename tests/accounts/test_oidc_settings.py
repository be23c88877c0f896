"""The providers of the service, read from the environment (config/env.py,
``oidc_providers_from_env``), as the embedding guide tells an operator to set them."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import GOOGLE_DISCOVERY_URL, oidc_providers_from_env

VARIABLES = (
    "ACCOUNTS_GITHUB_CLIENT_ID",
    "ACCOUNTS_GITHUB_SECRET",
    "ACCOUNTS_GOOGLE_CLIENT_ID",
    "ACCOUNTS_GOOGLE_SECRET",
    "ACCOUNTS_OIDC",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_no_variable_no_provider():
    assert oidc_providers_from_env() == {}


def test_github_google_and_a_provider_by_discovery(monkeypatch):
    monkeypatch.setenv("ACCOUNTS_GITHUB_CLIENT_ID", "gh-id")
    monkeypatch.setenv("ACCOUNTS_GITHUB_SECRET", "gh-secret")
    monkeypatch.setenv("ACCOUNTS_GOOGLE_CLIENT_ID", "g-id")
    monkeypatch.setenv("ACCOUNTS_GOOGLE_SECRET", "g-secret")
    monkeypatch.setenv("ACCOUNTS_OIDC", "corp-sso, keycloak")
    monkeypatch.setenv("ACCOUNTS_OIDC_CORP_SSO_DISCOVERY_URL", "https://id.corp.example/realms/staff")
    monkeypatch.setenv("ACCOUNTS_OIDC_CORP_SSO_CLIENT_ID", "comments")
    monkeypatch.setenv("ACCOUNTS_OIDC_CORP_SSO_SECRET", "corp-secret")
    monkeypatch.setenv("ACCOUNTS_OIDC_CORP_SSO_NAME", "Corp staff")
    monkeypatch.setenv("ACCOUNTS_OIDC_KEYCLOAK_DISCOVERY_URL", "https://kc.example/.well-known/openid-configuration")
    monkeypatch.setenv("ACCOUNTS_OIDC_KEYCLOAK_CLIENT_ID", "kc")
    assert oidc_providers_from_env() == {
        "github": {"kind": "github", "name": "GitHub", "client_id": "gh-id", "secret": "gh-secret"},
        "google": {
            "kind": "oidc",
            "name": "Google",
            "client_id": "g-id",
            "secret": "g-secret",
            "discovery_url": GOOGLE_DISCOVERY_URL,
        },
        "corp-sso": {
            "kind": "oidc",
            "name": "Corp staff",
            "client_id": "comments",
            "secret": "corp-secret",
            "discovery_url": "https://id.corp.example/realms/staff",
        },
        "keycloak": {
            "kind": "oidc",
            "name": "keycloak",
            "client_id": "kc",
            "secret": "",
            "discovery_url": "https://kc.example/.well-known/openid-configuration",
        },
    }


@pytest.mark.parametrize("key", ["Corp", "github", "email", "a b", "-x"])
def test_a_key_that_cannot_be_one_is_refused(monkeypatch, key):
    monkeypatch.setenv("ACCOUNTS_OIDC", key)
    with pytest.raises(ImproperlyConfigured, match="ACCOUNTS_OIDC"):
        oidc_providers_from_env()


def test_a_provider_without_its_discovery_url_or_client_is_refused(monkeypatch):
    monkeypatch.setenv("ACCOUNTS_OIDC", "corp")
    monkeypatch.setenv("ACCOUNTS_OIDC_CORP_CLIENT_ID", "comments")
    with pytest.raises(ImproperlyConfigured, match="ACCOUNTS_OIDC_CORP_DISCOVERY_URL"):
        oidc_providers_from_env()
    monkeypatch.setenv("ACCOUNTS_OIDC_CORP_DISCOVERY_URL", "id.corp.example")
    with pytest.raises(ImproperlyConfigured, match="an http"):
        oidc_providers_from_env()
