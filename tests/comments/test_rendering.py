"""Markdown rendering is safe to share between the threads of a gthread worker."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from comments import rendering

REPO = Path(__file__).resolve().parents[2]

# In a fresh interpreter: import the renderer, then report mdurl's tables of URL escapes.
_PROBE = """
import json
import comments.rendering
import mdurl._decode, mdurl._encode
tables = [*mdurl._encode.encode_cache.values(), *mdurl._decode.decode_cache.values()]
print(json.dumps({"encode": len(mdurl._encode.encode_cache), "decode": len(mdurl._decode.decode_cache),
                  "sizes": sorted({len(t) for t in tables})}))
"""


def test_importing_the_renderer_fills_the_url_escape_tables_before_any_request_renders():
    # mdurl publishes each table before filling it; a thread that read one half-built raised
    # IndexError (a 500 under load). A fresh process, so no earlier test filled them.
    done = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["encode"] >= 1 and found["decode"] >= 1
    assert found["sizes"] == [128]


def test_links_render_after_the_warm_up():
    html = rendering.render_markdown("see https://example.com/a%20b and [x](https://example.com/%41)")
    assert 'href="https://example.com/a%20b"' in html and 'href="https://example.com/%41"' in html
