"""The word list through the API and its effect on posting and editing: block, review, mask,
global and per-site lists, and how fast an edit reaches every process."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from comments.models import Comment
from moderation import words
from moderation.models import AuditEntry, ReviewTask, WordEntry

from ..api.conftest import API, assert_error, first_page, walk, walk_ids
from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

# Real commits: the word list change, review tasks and second checks run on commit, as in
# production.
pytestmark = pytest.mark.django_db(transaction=True)


def add_word(client, site, word, action, **extra):
    return client.post(
        f"{API}/moderation/words",
        {"site": getattr(site, "key", site), "word": word, "action": action, **extra},
        format="json",
    )


def post(client, subject, body, **extra):
    return client.post(f"{API}/subjects/{subject.id}/comments", {"body": body, **extra}, format="json")


@pytest.fixture
def mod_client(moderator, client_for):
    return client_for(moderator)


@pytest.fixture
def writer(client_for):
    return client_for(UserFactory())


def test_a_moderator_adds_lists_and_removes_words_of_their_site(mod_client, site):
    created = add_word(mod_client, site, "Spam", "block")
    assert created.status_code == 201
    entry = created.json()
    assert {k: entry[k] for k in ("site", "word", "action", "inside_words")} == {
        "site": site.key,
        "word": "Spam",
        "action": "block",
        "inside_words": False,
    }
    listed = mod_client.get(f"{API}/moderation/words", {"site": site.key}).json()["items"]
    assert [w["id"] for w in listed] == [entry["id"]]
    assert mod_client.delete(f"{API}/moderation/words/{entry['id']}").status_code == 204
    assert not WordEntry.objects.exists()
    assert list(AuditEntry.objects.order_by("id").values_list("action", flat=True)) == ["word_add", "word_remove"]


def test_the_word_list_is_paged_like_every_other_list(mod_client, client_for, site):
    staff = client_for(UserFactory(is_staff=True))
    every_site = [add_word(staff, None, f"global{i}", "block").json()["id"] for i in range(3)]
    mine = [add_word(mod_client, site, f"word{i}", "review").json()["id"] for i in range(4)]
    add_word(staff, SiteFactory(), "elsewhere", "mask")
    url = f"{API}/moderation/words"

    pages = walk(mod_client, url, {"site": site.key, "limit": 3})
    assert [len(page) for page in pages] == [3, 3, 1]
    assert [w["id"] for page in pages for w in page] == every_site + mine  # oldest first, each once
    assert walk_ids(staff, url, {"limit": 2}) == every_site  # no site: the list of every site
    first = first_page(mod_client, url, {"site": site.key})
    assert len(first["items"]) == 7 and first["next_cursor"] is None  # limit defaults to 20


def test_bad_word_list_paging_is_a_clear_error(mod_client, client_for, site, moderator):
    for i in range(3):
        add_word(mod_client, site, f"word{i}", "block")
    url = f"{API}/moderation/words"
    for limit in ("0", "-1", "101", "", "two"):
        assert_error(mod_client.get(url, {"site": site.key, "limit": limit}), 400, "invalid")
    assert_error(mod_client.get(url, {"site": site.key, "cursor": "not-a-cursor"}), 400, "invalid")
    # A cursor of another site's list, or of another list altogether, is refused.
    other = SiteFactory()
    other.moderators.add(moderator)
    foreign = mod_client.get(url, {"site": site.key, "limit": 1}).json()["next_cursor"]
    assert_error(mod_client.get(url, {"site": other.key, "cursor": foreign}), 400, "invalid")
    log_cursor = mod_client.get(f"{API}/moderation/log", {"site": site.key, "limit": 1}).json()["next_cursor"]
    assert_error(mod_client.get(url, {"site": site.key, "cursor": log_cursor}), 400, "invalid")
    staff = client_for(UserFactory(is_staff=True))
    assert_error(staff.get(url, {"cursor": foreign}), 400, "invalid")


def test_the_same_word_twice_is_refused_even_spelled_differently(mod_client, site):
    add_word(mod_client, site, "spam", "block")
    assert_error(add_word(mod_client, site, "ＳＰＡＭ", "review"), 400, "invalid")
    assert_error(add_word(mod_client, site, "...", "block"), 400, "invalid")
    assert_error(add_word(mod_client, site, "x" * 101, "block"), 400, "invalid")
    assert_error(add_word(mod_client, site, "\ufdfa" * 100, "block"), 400, "invalid")  # 1,800 letters once normalized
    assert_error(add_word(mod_client, site, "spam2", "ban"), 400, "invalid")


def test_only_staff_manage_the_list_of_every_site(mod_client, client_for, site, subject, writer):
    assert_error(add_word(mod_client, None, "spam", "block"), 403, "permission_denied")
    staff = client_for(UserFactory(is_staff=True))
    entry = add_word(staff, None, "spam", "block").json()
    assert entry["site"] is None
    # It applies on every site, and the site's moderators see it but cannot remove it.
    assert_error(post(writer, SubjectFactory(site=SiteFactory()), "buy spam now"), 400, "content_blocked")
    assert entry["id"] in [
        w["id"] for w in mod_client.get(f"{API}/moderation/words", {"site": site.key}).json()["items"]
    ]
    assert_error(mod_client.delete(f"{API}/moderation/words/{entry['id']}"), 403, "permission_denied")


def test_a_blocked_word_refuses_the_comment_and_stores_nothing(mod_client, writer, site, subject):
    add_word(mod_client, site, "scam", "block")
    error = assert_error(post(writer, subject, "What a S.C.A.M this is"), 400, "content_blocked")
    assert "scam" in error["fields"]["body"][0]
    assert not Comment.objects.filter(subject=subject).exists()


def test_a_review_word_holds_the_comment_with_a_task(mod_client, writer, api, site, subject):
    add_word(mod_client, site, "crypto", "review")
    posted = post(writer, subject, "Try CRYPTO today").json()
    assert posted["status"] == "pending"
    assert posted["id"] not in [i["id"] for i in api.get(f"{API}/subjects/{subject.id}/comments").json()["items"]]
    task = ReviewTask.objects.get(comment_id=posted["id"])
    assert task.reasons == ["word:crypto"] and task.state == "open"


def test_a_mask_word_is_starred_and_the_rest_kept_as_written(mod_client, writer, site, subject):
    add_word(mod_client, site, "darn", "mask")
    posted = post(writer, subject, "Well DARN it, **café** ☕").json()
    assert posted["status"] == "published"
    assert posted["body"] == "Well **** it, **café** ☕"
    assert "DARN" not in posted["html"] and "café" in posted["html"]


def test_an_innocent_longer_word_is_not_caught_unless_the_entry_says_so(mod_client, writer, site, subject):
    add_word(mod_client, site, "ass", "block")
    assert post(writer, subject, "A classic assessment of the grass").status_code == 201
    add_word(mod_client, site, "hell", "mask", inside_words=True)
    assert post(writer, subject, "Say hello").json()["body"] == "Say ****o"


def test_an_edit_is_checked_again(mod_client, client_for, site, subject):
    author = UserFactory()
    comment = CommentFactory(subject=subject, author=author)
    add_word(mod_client, site, "scam", "block")
    add_word(mod_client, site, "crypto", "review")
    client = client_for(author)
    assert_error(
        client.patch(f"{API}/comments/{comment.id}", {"body": "a scam"}, format="json"), 400, "content_blocked"
    )
    edited = client.patch(f"{API}/comments/{comment.id}", {"body": "crypto!"}, format="json").json()
    assert edited["status"] == "pending"
    assert ReviewTask.objects.filter(comment_id=comment.pk, state="open").exists()


def test_a_word_of_one_site_does_not_apply_to_another(mod_client, writer, site, subject):
    assert add_word(mod_client, site, "scam", "block").status_code == 201
    elsewhere = SubjectFactory(site=SiteFactory())
    # The control: the same word, writer and body on a subject of the word's own site are blocked
    # (the 201 below is the other site's, not a list that never took or is never checked).
    assert_error(post(writer, subject, "a scam"), 400, "content_blocked")
    assert post(writer, elsewhere, "a scam").status_code == 201


def test_moderators_are_not_held_but_are_still_blocked(mod_client, site, subject):
    add_word(mod_client, site, "crypto", "review")
    add_word(mod_client, site, "scam", "block")
    assert post(mod_client, subject, "crypto talk").json()["status"] == "published"
    assert_error(post(mod_client, subject, "scam"), 400, "content_blocked")


def test_a_list_edit_reaches_a_process_holding_an_old_automaton_after_the_recheck(settings, site, subject, moderator):
    settings.MODERATION_WORDS_RECHECK = 0.0
    global_words, site_words = words.filters_for(site.pk)
    assert len(site_words) == 0
    # Another process changes the list: the row and the version in the shared cache.
    WordEntry.objects.create(site=site, word="scam", normalized="scam", action="block")
    cache.set(words.VERSION_KEY, "changed-elsewhere", None)
    _, site_words = words.filters_for(site.pk)
    assert len(site_words) == 1


def test_a_process_keeps_its_automaton_between_rechecks(settings, site):
    settings.MODERATION_WORDS_RECHECK = 3600.0
    words.filters_for(site.pk)
    WordEntry.objects.create(site=site, word="scam", normalized="scam", action="block")
    cache.set(words.VERSION_KEY, "changed-elsewhere", None)
    assert len(words.filters_for(site.pk)[1]) == 0  # not yet: no cache read within the interval


def test_too_many_links_or_the_same_text_twice_hold_for_review(writer, subject, settings):
    settings.MODERATION_MAX_LINKS = 2
    links = "see https://a.example https://b.example https://c.example"
    assert post(writer, subject, links).json()["status"] == "pending"
    assert post(writer, subject, "first time").json()["status"] == "published"
    assert post(writer, subject, "First   time").json()["status"] == "pending"
    reasons = sorted(r for t in ReviewTask.objects.all() for r in t.reasons)
    assert reasons == ["spam:links", "spam:repeat"]
