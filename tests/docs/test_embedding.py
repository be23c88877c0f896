"""docs/embedding.md's server-side SSO code, as written there: each snippet is taken from the
file, run by its real interpreter or compiler (Python, Node.js, PHP, Go) with a few lines that
feed it a user and print what it returns, and the payload it printed signs that user in to the
API over HTTP. The interpreters come from Debian (``.ci/run`` installs nodejs, php-cli and
golang-go when missing)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from comments.avatars import avatar_path
from comments.models import ExternalIdentity

from ..factories import SiteFactory

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "embedding.md"
SECRET = "the host's secret: ünïcode & spaces"
USER = {
    "id": "host-user-42",
    "name": "Zoë 张三",
    "email": "zoe@blog.example",
    "avatar": "https://cdn.blog.example/zoe.png",
}
EXPECTED_LIFETIME = 3600  # what the guide says its functions default to: an hour

# Per language: the files to write (the snippet as it stands in the guide, and the few lines
# that call it with the user on stdin and the secret in SSO_SECRET), and the command.
HARNESSES = {
    "python": (
        {
            "sso.py": "{snippet}\n\nimport os, sys\nprint(comments_sso_payload(os.environ['SSO_SECRET'], json.load(sys.stdin)), end='')\n"
        },
        [sys.executable, "sso.py"],
    ),
    "javascript": (
        {
            "sso.js": "{snippet}\n\nconst input = require('node:fs').readFileSync(0, 'utf8');\n"
            "process.stdout.write(commentsSsoPayload(process.env.SSO_SECRET, JSON.parse(input)));\n"
        },
        ["node", "sso.js"],
    ),
    "php": (
        {
            "sso.php": "{snippet}\n\n$user = json_decode(file_get_contents('php://stdin'), true, 512, JSON_THROW_ON_ERROR);\n"
            "echo comments_sso_payload(getenv('SSO_SECRET'), $user);\n"
        },
        ["php", "sso.php"],
    ),
    "go": (
        {
            "sso.go": "package main\n\n{snippet}",
            "main.go": 'package main\n\nimport (\n\t"encoding/json"\n\t"fmt"\n\t"os"\n\t"time"\n)\n\n'
            "func main() {\n\tvar user CommentsUser\n"
            "\tif err := json.NewDecoder(os.Stdin).Decode(&user); err != nil {\n\t\tpanic(err)\n\t}\n"
            '\tpayload, err := CommentsSSOPayload(os.Getenv("SSO_SECRET"), user, time.Hour)\n'
            "\tif err != nil {\n\t\tpanic(err)\n\t}\n\tfmt.Print(payload)\n}\n",
        },
        ["go", "run", "sso.go", "main.go"],
    ),
}


def snippets() -> dict[str, str]:
    """The code blocks the guide marks ``<!-- sso:<language> -->``, by language."""
    found = re.findall(r"<!-- sso:(\w+) -->\s*```\w*\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)
    return dict(found)


def test_the_guide_has_a_snippet_for_each_language():
    assert sorted(snippets()) == sorted(HARNESSES)


def run_snippet(language: str, workdir: Path) -> str:
    files, command = HARNESSES[language]
    assert shutil.which(command[0]), (
        f"{command[0]} is not installed (.ci/run installs it: apt-get install nodejs php-cli golang-go)"
    )
    snippet = snippets()[language]
    for name, text in files.items():
        (workdir / name).write_text(text.replace("{snippet}", snippet), encoding="utf-8")
    env = {
        **os.environ,
        "SSO_SECRET": SECRET,
        # Go keeps its build cache under HOME unless told; a test leaves the machine as it was.
        "GOCACHE": str(workdir / "go-cache"),
        "GOPATH": str(workdir / "go"),
        "GO111MODULE": "off",
    }
    done = subprocess.run(
        command, cwd=workdir, input=json.dumps(USER), capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def sign_in(live_server, site_key: str, payload: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        f"{live_server.url}/api/v1/auth/sso",
        method="POST",
        data=json.dumps({"site": site_key, "payload": payload}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


@pytest.mark.parametrize("language", sorted(HARNESSES))
def test_the_guides_code_signs_a_reader_in(language, live_server, transactional_db, tmp_path):
    site = SiteFactory(sso_secret=SECRET)
    before = time.time()
    payload = run_snippet(language, tmp_path)

    body, signature = payload.split(".")
    assert re.fullmatch(r"[A-Za-z0-9_-]+", body) and re.fullmatch(r"[0-9a-f]{64}", signature), payload
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    assert {k: claims[k] for k in USER} == USER
    assert before + EXPECTED_LIFETIME - 5 <= claims["exp"] <= time.time() + EXPECTED_LIFETIME + 5

    status, answer = sign_in(live_server, site.key, payload)
    assert status == 200, answer
    assert answer["user"]["name"] == USER["name"]
    # The picture, served from the service's origin (comments.avatars).
    assert answer["user"]["avatar"] == avatar_path(answer["user"]["id"], USER["avatar"])
    identity = ExternalIdentity.objects.get(site=site, external_id=USER["id"])
    assert (identity.user_id, identity.email) == (answer["user"]["id"], USER["email"])
    # Signed with another secret, the same code's payload is refused.
    status, answer = sign_in(live_server, SiteFactory(sso_secret="another secret").key, payload)
    assert (status, answer["error"]["code"]) == (401, "not_authenticated")
