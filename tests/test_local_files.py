"""Importing the settings writes nothing; the programs make what the settings point to: the
var/ folder, the static root and, for the embedded default, a kept secret key that stays the
same from one start to the next. Each case runs in a fresh interpreter with an environment
of its own (a settings module is imported once per process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCTION_PARTS = (
    "DATABASE_URL",
    "REDIS_URL",
    "CELERY_BROKER_URL",
    "DJANGO_SECRET_KEY",
    "DJANGO_DEBUG",
    "DJANGO_STATIC_ROOT",
    "LIKES_REDIS_URL",
    "DJANGO_SETTINGS_MODULE",
)


def _run(code: str, var_dir: Path, **env: str) -> subprocess.CompletedProcess:
    import os

    environment = {k: v for k, v in os.environ.items() if k not in PRODUCTION_PARTS}
    environment.update(COMMENTS_VAR_DIR=str(var_dir), DJANGO_SETTINGS_MODULE="config.settings", **env)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=environment, capture_output=True, text=True, timeout=60
    )


SETUP = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"


def test_importing_the_settings_writes_nothing_and_says_how_to_get_a_key(tmp_path):
    var_dir = tmp_path / "var"
    result = _run(SETUP, var_dir)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set (or start through manage.py once" in result.stderr
    assert not var_dir.exists()

    result = _run(SETUP, var_dir, DJANGO_SECRET_KEY="given", DATABASE_URL="postgres://nobody@127.0.0.1:1/none")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "given"
    assert not var_dir.exists()


def test_outside_the_embedded_default_a_key_must_be_given(tmp_path):
    result = _run(SETUP, tmp_path / "var", REDIS_URL="redis://127.0.0.1:6379/15")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set outside the embedded default" in result.stderr
    assert not (tmp_path / "var").exists()


def test_the_programs_prepare_the_folders_and_a_key_that_survives_a_restart(tmp_path):
    var_dir = tmp_path / "var"
    start = "import config.wsgi; from django.conf import settings; print(settings.SECRET_KEY)"
    first = _run(start, var_dir)
    assert first.returncode == 0, first.stderr
    assert (var_dir / "static").is_dir()
    key = (var_dir / "secret_key").read_text()
    assert first.stdout.strip() == key and len(key) >= 50

    second = _run(
        "import sys; sys.argv = ['manage.py', 'check']; import manage; manage.main(); "
        "from django.conf import settings; print(settings.SECRET_KEY)",
        var_dir,
    )
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().splitlines()[-1] == key  # the same key: sessions survive a restart


def test_the_server_settings_read_the_environment_through_the_one_reader(tmp_path):
    code = "import runpy; c = runpy.run_path('config/gunicorn.py'); print(c['workers'], c['threads'], c['bind'])"
    result = _run(code, tmp_path / "var", GUNICORN_WORKERS="3", GUNICORN_THREADS="6", GUNICORN_BIND="127.0.0.1:9")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["3", "6", "127.0.0.1:9"]

    result = _run(code, tmp_path / "var", GUNICORN_WORKERS="many")
    assert result.returncode != 0
    assert "GUNICORN_WORKERS must be an integer, got 'many'" in result.stderr
