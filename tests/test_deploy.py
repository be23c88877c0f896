"""The production files of deploy/ work as docs/production.md uses them: ``comments-manage``
reads the environment file as systemd's ``EnvironmentFile=`` does, values written as they are
(an e-mail sender with '<' and '>', a password with '$', '&' and spaces), not run as shell."""

from __future__ import annotations

import json
import os
import subprocess

from .servers import REPO

SHOW = (
    "import json, os; from django.conf import settings; "
    "print(json.dumps([settings.DEFAULT_FROM_EMAIL, os.environ['DATABASE_URL'], os.environ['QUOTED'], "
    "os.environ['SINGLE']]))"
)


def _manage(env_file, *args: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": os.environ["PATH"],
        "COMMENTS_ENV_FILE": str(env_file),
        "COMMENTS_HOME": str(REPO),
    }
    # comments-manage runs COMMENTS_HOME's .venv/bin/python: the README's install makes it.
    assert (REPO / ".venv" / "bin" / "python").exists(), "the checkout has no .venv"
    return subprocess.run(
        ["sh", str(REPO / "deploy" / "comments-manage"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_comments_manage_reads_the_example_environment_file_as_systemd_does(tmp_path):
    example = (REPO / "deploy" / "comments.env.example").read_text()
    assert 'EMAIL_FROM="Comments <comments@example.com>"' in example
    filled = example.replace("COMMENTS_VAR_DIR=/var/lib/comments", f"COMMENTS_VAR_DIR={tmp_path / 'var'}")
    filled = filled.replace("postgres://comments:PASSWORD@", "postgres://comments:pa$$word&; x@")
    filled += "  QUOTED=\"two  spaces $HOME\"\nSINGLE='it is `not` run'\n"
    env_file = tmp_path / "comments.env"
    env_file.write_text(filled)

    done = _manage(env_file, "shell", "-c", SHOW)

    assert done.returncode == 0, done.stderr[-2000:]
    sender, database_url, quoted, single = json.loads(done.stdout.strip().splitlines()[-1])
    assert sender == "Comments <comments@example.com>"
    assert database_url == "postgres://comments:pa$$word&; x@127.0.0.1:5432/comments"
    assert quoted == "two  spaces $HOME"
    assert single == "it is `not` run"


def test_a_line_that_is_not_a_setting_stops_it_with_the_line_named(tmp_path):
    env_file = tmp_path / "comments.env"
    env_file.write_text("DJANGO_SECRET_KEY=x\nthis is not a setting\n")
    done = _manage(env_file, "check")
    assert done.returncode == 1
    assert "not KEY=value: this is not a setting" in done.stderr


def test_the_example_environment_file_is_sh_too(tmp_path):
    """An operator's own scripts may source the file: the example is valid sh as well, with the
    values systemd reads."""
    sourced = subprocess.run(
        [
            "sh",
            "-c",
            'set -a; . "$1"; set +a; printf "%s\\n" "$EMAIL_FROM" "$DATABASE_URL"',
            "sh",
            str(REPO / "deploy" / "comments.env.example"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert sourced.returncode == 0, sourced.stderr
    assert sourced.stdout.splitlines() == [
        "Comments <comments@example.com>",
        "postgres://comments:PASSWORD@127.0.0.1:5432/comments",
    ]
    # As it is, but for the folder the service writes to (the example's is the machine's).
    example = (REPO / "deploy" / "comments.env.example").read_text()
    env_file = tmp_path / "comments.env"
    env_file.write_text(example.replace("COMMENTS_VAR_DIR=/var/lib/comments", f"COMMENTS_VAR_DIR={tmp_path / 'var'}"))
    done = _manage(env_file, "check")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "no issues" in done.stdout
