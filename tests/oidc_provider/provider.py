"""Start and stop the test provider (``serve.py``) in a subprocess on a free port of loopback."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from tests.servers import REPO, free_port, wait_until

CLIENT_ID = "comment-service"
SECRET = "comment-service-secret"
USERNAME, PASSWORD = "ada", "lovelace-1815"
PICTURE = "https://pictures.example/ada.png"  # the picture the provider vouches for (its validator)


@dataclass
class Provider:
    issuer: str
    process: subprocess.Popen
    log: Path

    @property
    def discovery_url(self) -> str:
        return f"{self.issuer}/.well-known/openid-configuration"


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def start(redirect_uris: list[str]) -> Provider:
    """The provider at ``http://127.0.0.1:<port>/o``, its client allowed ``redirect_uris``."""
    port = free_port()
    folder = Path(tempfile.mkdtemp(prefix="oidc-provider-"))
    env = {**os.environ, "PROVIDER_DB": str(folder / "provider.sqlite3")}
    for name in ("DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL"):
        env.pop(name, None)
    log = folder / "provider.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.oidc_provider.serve", str(port), CLIENT_ID, SECRET, *redirect_uris],
            cwd=REPO,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    provider = Provider(issuer=f"http://127.0.0.1:{port}/o", process=process, log=log)
    wait_until(
        lambda: process.poll() is not None or _answers(provider.discovery_url), "the test provider did not answer"
    )
    if process.poll() is not None:
        raise AssertionError(f"the test provider did not start: {log.read_text()[-2000:]}")
    return provider


def send_coop(provider: Provider, on: bool) -> None:
    """Have the provider's pages send ``Cross-Origin-Opener-Policy: same-origin``, or not."""
    base = provider.issuer.rsplit("/o", 1)[0]
    with urllib.request.urlopen(
        urllib.request.Request(f"{base}/coop/{'on' if on else 'off'}", method="POST"), timeout=5
    ):
        pass


def stop(provider: Provider) -> None:
    if provider.process.poll() is None:
        os.killpg(provider.process.pid, signal.SIGTERM)
        provider.process.wait(15)
    shutil.rmtree(provider.log.parent, ignore_errors=True)
