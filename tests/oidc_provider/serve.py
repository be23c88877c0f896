"""Run the test provider: ``python -m tests.oidc_provider.serve PORT CLIENT_ID SECRET
REDIRECT_URI...``. Migrates its database, makes the user ``ada`` (password ``lovelace-1815``)
and the confidential client, then serves on 127.0.0.1:PORT until killed."""

import os
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


def main(port: int, client_id: str, secret: str, redirect_uris: list[str]) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    os.environ["PROVIDER_RSA_KEY"] = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.oidc_provider.settings"
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.core.servers.basehttp import WSGIServer, run
    from django.core.wsgi import get_wsgi_application
    from oauth2_provider.models import Application

    call_command("migrate", verbosity=0)
    User.objects.create_user("ada", "ada@example.com", "lovelace-1815", first_name="Ada", last_name="Lovelace")
    Application.objects.create(
        name="Comment service",
        client_id=client_id,
        client_secret=secret,
        hash_client_secret=False,
        client_type=Application.CLIENT_CONFIDENTIAL,
        authorization_grant_type=Application.GRANT_AUTHORIZATION_CODE,
        redirect_uris=" ".join(redirect_uris),
        algorithm=Application.RS256_ALGORITHM,
        skip_authorization=False,
    )
    run("127.0.0.1", port, get_wsgi_application(), threading=True, server_cls=WSGIServer)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4:])
