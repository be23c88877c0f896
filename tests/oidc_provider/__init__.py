"""A real OpenID Connect provider for the sign-in tests: a small Django project of its own
(django-oauth-toolkit with OIDC on), served in a subprocess on loopback by ``serve.py`` with a
fresh RSA key, one user and one registered client. ``provider.py`` starts and stops it."""
