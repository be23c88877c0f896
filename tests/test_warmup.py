"""A web worker loads, before its first request, what Django and DRF would otherwise load on the
first requests (config/warmup.py, called by config/gunicorn.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# A fresh worker's process: the application loaded as gunicorn loads it, then what is loaded
# before and after the warm-up.
PROBE = """
import json, sys
import django
django.setup()
from django.core.wsgi import get_wsgi_application
get_wsgi_application()
from django.template import engines

def loaded():
    cache = engines["django"].engine.template_loaders[0].get_template_cache
    return {"views": "comments.api.views" in sys.modules, "templates": sorted(cache)}

before = loaded()
from config.warmup import warm_up
warm_up()
print(json.dumps({"before": before, "after": loaded()}))
"""


def test_a_worker_loads_the_views_and_the_readers_templates_before_its_first_request():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DJANGO_SECRET_KEY": "warm-up test"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout.strip().splitlines()[-1])

    assert loaded["before"] == {"views": False, "templates": []}
    assert loaded["after"]["views"] is True
    readers = {f"comments/{p.name}" for p in (REPO / "templates" / "comments").glob("*.html")}
    assert readers and readers <= set(loaded["after"]["templates"])
