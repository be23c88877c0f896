"""Issue 33, F2: a bearer token issued by a site's sign-in (its SSO, an email link, a provider, a
guest's form) acts on that site alone. Attacked as an outsider does: the operator of one site
signs a user of their own making in through their site's SSO, over HTTP, and takes the token
to another site, which allows no sign-in method at all."""

from __future__ import annotations

import time

import pytest
import requests

from comments.models import Comment, Subject
from comments.services import comment_create, token_issue
from comments.sso import sign_payload
from likes.models import Like
from moderation.models import Report

from ..factories import SiteFactory, SubjectFactory, UserFactory


@pytest.fixture
def sites(transactional_db):
    """The attacker's site, whose SSO secret they hold, and the victim's site, which signs
    nobody in by any method."""
    mine = SiteFactory(key="mine", sso_secret="the attackers own secret", signin_sso=True)
    theirs = SiteFactory(key="theirs", signin_sso=False, signin_email=False, signin_oidc=[], signin_guests=False)
    return mine, theirs


def sso_token(server: str, site, external_id: str, name: str) -> str:
    payload = sign_payload(site.sso_secret, {"id": external_id, "name": name, "exp": time.time() + 300})
    answer = requests.post(f"{server}/api/v1/auth/sso", json={"site": site.key, "payload": payload}, timeout=10)
    assert answer.status_code == 200, answer.text
    return answer.json()["token"]


def call(server: str, token: str, method: str, path: str, body: dict | None = None) -> requests.Response:
    return requests.request(
        method, f"{server}/api/v1{path}", json=body, headers={"Authorization": f"Bearer {token}"}, timeout=10
    )


def assert_other_site(answer: requests.Response) -> None:
    assert answer.status_code == 403, answer.text
    assert answer.json()["error"]["code"] == "other_site"


def test_another_sites_sso_token_takes_no_part_here(sites, live_server):
    mine, theirs = sites
    server = live_server.url
    token = sso_token(server, mine, "x1", "Site Moderator")
    subject = SubjectFactory(site=theirs)
    someone = comment_create(subject=subject, author=UserFactory(), body="A comment on their site.")

    assert_other_site(call(server, token, "POST", f"/subjects/{subject.pk}/comments", {"body": "spam"}))
    assert_other_site(
        call(server, token, "POST", f"/subjects/{subject.pk}/comments", {"body": "spam", "reply_to_id": someone.pk})
    )
    assert_other_site(call(server, token, "PUT", f"/comments/{someone.pk}/like"))
    assert_other_site(call(server, token, "POST", f"/comments/{someone.pk}/reports", {"reason": "spam"}))
    assert_other_site(call(server, token, "POST", "/subjects", {"site": "theirs", "key": "new-page"}))
    assert Comment.objects.count() == 1 and not Like.objects.exists() and not Report.objects.exists()
    assert not Subject.objects.filter(key="new-page").exists()

    # On the site that issued it, the same token takes part.
    own = SubjectFactory(site=mine)
    assert call(server, token, "POST", f"/subjects/{own.pk}/comments", {"body": "At home."}).status_code == 201


def test_a_sign_in_a_site_issued_edits_and_deletes_only_there(sites, live_server):
    """The same user (an email address or a provider's account is one user on every site) with
    a token of each site, as an email link or a provider's sign-in issues them: each token
    reaches its own site's comments alone."""
    mine, theirs = sites
    reader = UserFactory()
    here = comment_create(subject=SubjectFactory(site=theirs), author=reader, body="Written on their site.")
    mine_token, _ = token_issue(user=reader, site=mine)
    theirs_token, _ = token_issue(user=reader, site=theirs)
    server = live_server.url

    assert_other_site(call(server, mine_token, "PATCH", f"/comments/{here.pk}", {"body": "Rewritten elsewhere."}))
    assert_other_site(call(server, mine_token, "DELETE", f"/comments/{here.pk}"))
    here.refresh_from_db()
    assert here.status == "published" and here.content.body == "Written on their site."
    assert call(server, theirs_token, "PATCH", f"/comments/{here.pk}", {"body": "Rewritten."}).status_code == 200


def test_another_sites_token_moderates_nothing_here(sites, live_server):
    """A user who moderates the victim's site, signed in by the attacker's SSO (the attacker
    can sign in anyone their SSO names): no moderator's right reaches the victim's site."""
    mine, theirs = sites
    moderator = UserFactory()
    theirs.moderators.add(moderator)
    mine.moderators.add(moderator)
    subject = SubjectFactory(site=theirs)
    comment = comment_create(subject=subject, author=UserFactory(), body="Leave me be.")
    token, _ = token_issue(user=moderator, site=mine)
    server = live_server.url

    answer = call(server, token, "PATCH", f"/subjects/{subject.pk}", {"state": "closed"})
    assert answer.status_code == 403, answer.text
    answer = call(server, token, "POST", f"/moderation/comments/{comment.pk}/actions", {"action": "reject"})
    assert answer.status_code in (403, 404), answer.text
    assert call(server, token, "GET", "/moderation/queue?site=theirs").status_code == 403
    subject.refresh_from_db()
    comment.refresh_from_db()
    assert subject.state == "open" and comment.status == "published"
    # With a token of the victim's site, or a password's, the same moderator moderates it.
    for good in (token_issue(user=moderator, site=theirs)[0], token_issue(user=moderator)[0]):
        assert call(server, good, "GET", "/moderation/queue?site=theirs").status_code == 200


def test_a_password_sign_in_is_good_on_every_site(sites, live_server):
    mine, theirs = sites
    token, _ = token_issue(user=UserFactory())  # what POST /auth/token issues
    for site in sites:
        subject = SubjectFactory(site=site)
        answer = call(live_server.url, token, "POST", f"/subjects/{subject.pk}/comments", {"body": "Everywhere."})
        assert answer.status_code == 201, answer.text
