"""A GDPR request names a person as they know themselves, not by the generated username of an
imported or e-mail account: ``export_user_data`` and ``erase_user`` find them by e-mail, by a
site's SSO user id, or list the candidates a name matches (acting on none)."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from accounts.models import EmailAccount, Guest
from comments import services as comment_services

from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    """Ada signed in by an e-mail link (a generated username) and, with the same address, by
    the blog's SSO: two accounts; Grace gave her address as a guest."""
    site = SiteFactory(key="blog")
    by_link = UserFactory(username="e-9f2c1a", display_name="Ada Lovelace", email="")
    EmailAccount.objects.create(email="ada@example.com", user=by_link, verified_at=timezone.now())
    by_sso = comment_services.sso_user_upsert(site=site, external_id="42", name="Ada L.", email="ADA@example.com")
    grace = UserFactory(username="g-71aa", display_name="Grace", is_guest=True, email="")
    Guest.objects.create(user=grace, site=site, email="grace@example.com")
    subject = SubjectFactory(site=site)
    CommentFactory(subject=subject, author=by_link)
    return {"by_link": by_link, "by_sso": by_sso, "grace": grace}


def test_a_guest_is_found_by_the_address_they_gave_and_their_data_exported(people, tmp_path):
    path = tmp_path / "grace.json"
    call_command("export_user_data", "--email", "Grace@Example.com", "-o", str(path))
    assert json.loads(path.read_bytes())["user"]["id"] == people["grace"].pk


def test_a_site_s_sso_user_id_names_one_person(people):
    out = io.StringIO()
    call_command("erase_user", "--sso", "blog:42", stdout=out)
    assert "comments_kept_as_placeholders: 0" in out.getvalue()
    people["by_sso"].refresh_from_db()
    assert not people["by_sso"].is_active
    people["by_link"].refresh_from_db()
    assert people["by_link"].is_active


def test_an_address_of_two_accounts_lists_both_and_erases_neither(people):
    with pytest.raises(CommandError) as refused:
        call_command("erase_user", "--email", "ada@example.com")
    said = str(refused.value)
    assert "2 users with e-mail 'ada@example.com'" in said
    assert f"id {people['by_link'].pk}: 'e-9f2c1a', shown as 'Ada Lovelace'" in said
    assert f"id {people['by_sso'].pk}:" in said
    assert "1 comment(s)" in said and "run again with the user's id" in said
    for user in (people["by_link"], people["by_sso"]):
        user.refresh_from_db()
        assert user.is_active


def test_a_name_lists_candidates_and_never_acts_even_on_one(people):
    with pytest.raises(CommandError) as refused:
        call_command("erase_user", "--name", "lovelace")
    assert f"1 users with name 'lovelace':\n  id {people['by_link'].pk}:" in str(refused.value)
    people["by_link"].refresh_from_db()
    assert people["by_link"].is_active


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--email", "nobody@example.com"], "no user with e-mail 'nobody@example.com'"),
        (["--sso", "blog"], "SITE:ID expected"),
        (["--sso", "elsewhere:42"], "no user with SSO id 'elsewhere:42'"),
        ([], "name the person by a user id or username"),
        (["e-9f2c1a", "--email", "ada@example.com"], "name the person by a user id or username"),
    ],
)
def test_what_names_nobody_says_so(people, args, said):
    with pytest.raises(CommandError, match=said):
        call_command("export_user_data", *args, "-o", "-")
