"""The widget page carries the notifications' markup (hidden until someone signs in) and its own
script and stylesheet from the service's origin, in the reader's language, under the widget's
CSP: no inline script or style."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("lang", "words"), [("en", "{name} replied to your comment"), ("zh-hans", "{name} 回复了你的评论")]
)
def test_the_widget_page_loads_the_notifications_script_with_its_words_in_the_readers_language(subject, lang, words):
    response = Client().get("/embed/", {"site": subject.site.key, "key": subject.key, "lang": lang})
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="cw-nt" hidden' in html
    assert f'data-reply="{words}"' in html
    assert '<script src="/static/comments/notifications.js" defer></script>' in html
    assert 'href="/static/comments/notifications.css"' in html
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert "style-src 'self'" in response["Content-Security-Policy"]
    assert "<script>" not in html and " style=" not in html
