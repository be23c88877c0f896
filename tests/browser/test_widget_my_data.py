"""A reader's own data from the widget (issue 39, A9): signed in on a blog by its SSO, they open
"Your data", download the document the API keeps for them and read their comment in it, then
delete their account after a confirmation they can back out of; the widget signs them out and
the service has erased them. The host's sign-in leaves no "Signed in." line standing."""

from __future__ import annotations

import json
import time

import pytest
from playwright.sync_api import expect

from comments.models import ApiToken, Comment, User
from comments.sso import sign_payload
from tests.browser.conftest import assert_seen_by_a_person, click, type_into
from tests.browser.test_signin import serve_static_page

SECRET = "my-data-sso-secret"


@pytest.fixture
def sso_blog(live_server, transactional_db):
    payload = sign_payload(SECRET, {"id": "reader-1", "name": "Ada Lovelace", "exp": int(time.time()) + 600})
    url, server = serve_static_page(live_server, sso=payload, sso_secret=SECRET)
    yield url
    server.shutdown()
    server.server_close()


def test_a_reader_downloads_their_data_then_deletes_their_account(page, sso_blog, tmp_path, shot):
    page.goto(sso_blog)
    widget = page.frame_locator("iframe")
    assert_seen_by_a_person(widget.locator("#cw-me"))
    expect(widget.locator("#cw-me")).to_contain_text("Signed in as Ada Lovelace")
    expect(widget.locator("#cw-status")).to_have_text("")  # the host signed them in: nothing to say

    type_into(widget.get_by_label("Your comment"), "Words of mine, to take with me.")
    click(widget.get_by_role("button", name="Post"))
    assert_seen_by_a_person(widget.locator(".cw-c", has_text="Words of mine, to take with me."))

    click(widget.get_by_role("button", name="Your data"))
    download_button = widget.get_by_role("button", name="Download my data")
    assert_seen_by_a_person(download_button)
    shot(page, "your-data-open")
    with page.expect_download() as downloading:
        click(download_button)
    download = downloading.value
    assert download.suggested_filename == "my-comments-data.json"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    document = json.loads(saved.read_text())
    assert document["format"] == "comments-user-data"
    assert document["user"]["name"] == "Ada Lovelace"
    assert [c["body"] for c in document["comments"]] == ["Words of mine, to take with me."]

    # Deleting asks first, and backing out deletes nothing.
    click(widget.get_by_role("button", name="Delete my account"))
    confirm = widget.get_by_role("button", name="Yes, delete my account")
    assert_seen_by_a_person(confirm)
    expect(widget.locator("#cw-md-confirm")).to_contain_text("This cannot be undone.")
    shot(page, "delete-confirmation")
    click(widget.get_by_role("button", name="Cancel"))
    expect(confirm).to_be_hidden()
    user = User.objects.get(display_name="Ada Lovelace")
    assert user.is_active and Comment.objects.filter(author=user).exists()

    click(widget.get_by_role("button", name="Delete my account"))
    click(widget.get_by_role("button", name="Yes, delete my account"))
    assert_seen_by_a_person(widget.get_by_text("Your account and your data were deleted."))
    expect(widget.locator("#cw-me")).to_be_hidden()
    expect(widget.get_by_role("button", name="Your data")).to_be_hidden()
    expect(widget.locator(".cw-c", has_text="Words of mine, to take with me.")).to_have_count(0)
    shot(page, "account-deleted")

    user.refresh_from_db()
    assert not user.is_active
    assert not Comment.objects.filter(author=user).exists()
    assert not ApiToken.objects.filter(user=user).exists()
    assert [p for p in page.problems if "favicon" not in p] == []
