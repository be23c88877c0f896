"""config/gunicorn.py as gunicorn itself reads it (``--print-config``: the settings fully
resolved, the application loaded as a worker would load it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def resolved(**env: str) -> dict[str, str]:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", "config/gunicorn.py", "--print-config", "config.wsgi"],
        cwd=REPO,
        env={
            **{k: v for k, v in os.environ.items() if not k.startswith("GUNICORN_")},
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DJANGO_SECRET_KEY": os.environ.get("DJANGO_SECRET_KEY") or "gunicorn-config",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    settings = {}
    for line in done.stdout.splitlines():
        name, sep, value = line.partition("=")
        if sep:
            settings[name.strip()] = value.strip()
    return settings


def test_an_instance_has_no_control_socket_unless_one_is_named_for_it(tmp_path):
    """The default path is one per user ($XDG_RUNTIME_DIR/gunicorn.ctl), so two instances on
    one machine would share it: each takes it over from the other."""
    assert resolved()["control_socket_disable"] == "True"

    named = resolved(GUNICORN_CONTROL_SOCKET=str(tmp_path / "web-8001.ctl"))
    assert (named["control_socket_disable"], named["control_socket"]) == ("False", str(tmp_path / "web-8001.ctl"))
