"""The API against its own OpenAPI schema: Schemathesis on a live server (pytest-django's
``live_server``, this test's database), every phase (the schema's examples, its coverage
cases, random fuzzing, and stateful sequences that follow the schema's links), as a plain
signed-in reader and as a site moderator, over a seeded site (subjects in every mode, comments
and replies, a review task, a word, a sanction).

Any server error (5xx) or any answer the schema does not describe (status, media type, body,
headers) fails the test. Bounded: ``FUZZ_MAX_EXAMPLES`` random cases per operation and phase,
``FUZZ_STATEFUL_EXAMPLES`` stateful scenarios of up to ``FUZZ_STATEFUL_STEPS`` calls (the
environment may raise them for a longer run by hand); the whole module takes a few minutes per
database mode. ``FUZZ_REPORT=<path>`` writes the figures of a run (cases by phase and role)."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass

import pytest
import schemathesis
from django.conf import settings
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis.errors import Flaky
from schemathesis.core.failures import FailureGroup
from schemathesis.engine.errors import is_inconsistent_replay

from comments.models import Mode
from comments.services import token_issue
from moderation import services as moderation
from moderation.models import ReviewTask

from ..factories import CommentFactory, SiteFactory, SubjectFactory, UserFactory

pytestmark = pytest.mark.django_db(transaction=True)

MAX_EXAMPLES = int(os.environ.get("FUZZ_MAX_EXAMPLES", "12"))
STATEFUL_EXAMPLES = int(os.environ.get("FUZZ_STATEFUL_EXAMPLES", "40"))
STATEFUL_STEPS = int(os.environ.get("FUZZ_STATEFUL_STEPS", "6"))
SEED = int(os.environ.get("FUZZ_SEED", "20260433"))
STATEFUL_ROUNDS = 5

# What a failure is: the issue's five checks, and nothing else (positive_data_acceptance and the
# like judge the fuzzer's guesses, not the service).
CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "response_headers_conformance",
)

HYPOTHESIS = hypothesis_settings(
    deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck), print_blob=True
)

CASES: Counter = Counter()
NOT_FOUND: Counter = Counter()  # of those, answered 404 (how often a case missed every real object)
ROUNDS_CUT_SHORT: Counter = Counter()


@dataclass
class World:
    site_key: str
    member: object
    moderator: object
    other: object
    subject_ids: list[int]
    comment_ids: list[int]
    user_ids: list[int]
    task_ids: list[int]
    word_ids: list[int]
    sanction_ids: list[int]


def seed_world() -> World:
    """A site with a moderator, a member and another reader; a subject per display mode, each
    with top-level comments, replies and a reply to a reply; a comment held for review (a review
    word), a word and a sanction."""
    # "demo", as the schema's examples name it (the examples phase posts to it).
    site = SiteFactory(key="demo", signin_guests=True, allowed_origins=["https://host.example"])
    moderator = UserFactory(username="fuzz-moderator")
    site.moderators.add(moderator)
    member, other = UserFactory(username="fuzz-member"), UserFactory(username="fuzz-other")
    subjects = [SubjectFactory(site=site, key=f"article:{mode}", mode=mode) for mode in Mode.values]
    comments = []
    for subject in subjects:
        for author in (member, other, moderator):
            # Every body its own: the same words again and again are held as spam.
            where = f"{author.username} on {subject.key}"
            top = CommentFactory(subject=subject, author=author, body=f"A first word from {where}")
            reply = CommentFactory(subject=subject, author=other, reply_to=top, body=f"A reply to {where}")
            deeper = CommentFactory(subject=subject, author=member, reply_to=reply, body=f"@fuzz-other and {where}")
            comments += [top, reply, deeper]
    word = moderation.word_create(actor=moderator, site=site, word="fuzzword", action="review")
    held = CommentFactory(subject=subjects[0], author=other, body="This one says fuzzword")
    sanction = moderation.sanction_create(actor=moderator, site=site, user_id=other.pk, kind="trust")
    tasks = list(ReviewTask.objects.filter(site=site).values_list("pk", flat=True))
    assert tasks, "the review word held a comment"
    return World(
        site_key=site.key,
        member=member,
        moderator=moderator,
        other=other,
        subject_ids=[s.pk for s in subjects],
        comment_ids=[c.pk for c in [*comments, held]],
        user_ids=[member.pk, other.pk, moderator.pk],
        task_ids=tasks,
        word_ids=[word.pk],
        sanction_ids=[sanction.pk],
    )


def fuzz_config(world: World) -> schemathesis.Config:
    """Every phase; the five checks; the seeded objects offered to the fuzzer for most ids and
    keys (the rest stay random), so cases reach real objects rather than 404."""

    def pool(values, probability=0.7):
        return {"dictionary": values, "probability": probability}

    dictionaries = {
        "sites": {"values": [world.site_key]},
        "subjects": {"values": world.subject_ids},
        "comments": {"values": world.comment_ids},
        "users": {"values": world.user_ids},
        "tasks": {"values": world.task_ids},
        "words": {"values": world.word_ids},
        "sanctions": {"values": world.sanction_ids},
    }
    parameters = {
        "path.site_key": pool("sites"),
        "query.site": pool("sites", 0.8),
        "body.site": pool("sites", 0.8),
        "path.subject_id": pool("subjects"),
        "path.comment_id": pool("comments"),
        "body.reply_to_id": pool("comments", 0.5),
        "path.user_id": pool("users"),
        "body.user_id": pool("users"),
        "path.task_id": pool("tasks"),
        "path.word_id": pool("words", 0.3),
        "path.sanction_id": pool("sanctions", 0.3),
    }
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "dictionaries": dictionaries,
            "parameters": parameters,
            "generation": {"max-examples": MAX_EXAMPLES},
            "phases": {
                "examples": {"enabled": True},
                "coverage": {"enabled": True},
                "fuzzing": {"enabled": True},
                # Not steered by the answers: Hypothesis must draw the same way on a replay.
                "stateful": {"enabled": True, "link-calibration": False},
            },
            "checks": {"enabled": False, **{name: {"enabled": True} for name in CHECKS}},
        }
    )


class Auth:
    """The role's bearer token on every call, but for the calls that end a token: signing out
    (``DELETE /auth/token``, ``DELETE /auth/session``) revokes a token of its own, and erasing
    one's data (``DELETE /me/data``) erases a user made for that one call."""

    def __init__(self, user):
        self.user = user
        self.token = token_issue(user=user)[0]

    def headers(self, case) -> dict[str, str]:
        operation = f"{case.method.upper()} {case.path}"
        if operation in ("DELETE /api/v1/auth/token", "DELETE /api/v1/auth/session"):
            token = token_issue(user=self.user)[0]
        elif operation == "DELETE /api/v1/me/data":
            token = token_issue(user=UserFactory())[0]
        else:
            token = self.token
        return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def world(transactional_db, settings, request):
    if settings.LIKES_REDIS_URL:  # PostgreSQL mode: the suite's Redis, emptied around the test
        request.getfixturevalue("redis_url")
    settings.RATE_LIMITS = {}
    return seed_world()


@pytest.fixture
def member(world) -> Auth:
    return Auth(world.member)


@pytest.fixture
def moderator(world) -> Auth:
    return Auth(world.moderator)


@pytest.fixture(params=["member", "moderator"])
def role(request) -> Auth:
    return request.getfixturevalue(request.param)


@pytest.fixture
def api_schema(live_server, world):
    return schemathesis.openapi.from_url(f"{live_server.url}/api/v1/schema/", config=fuzz_config(world))


@pytest.fixture(scope="module", autouse=True)
def _report():
    started = time.monotonic()
    yield
    path = os.environ.get("FUZZ_REPORT")
    if path:
        figures = {
            "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
            "seconds": round(time.monotonic() - started, 1),
            "max_examples": MAX_EXAMPLES,
            "stateful_examples": STATEFUL_EXAMPLES,
            "stateful_steps": STATEFUL_STEPS,
            "cases": dict(sorted(CASES.items())),
            "total": sum(CASES.values()),
            "not_found": dict(sorted(NOT_FOUND.items())),
            "stateful_rounds_cut_short": dict(ROUNDS_CUT_SHORT),
        }
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps(figures) + "\n")


@pytest.fixture(autouse=True)
def _node_id_for_schemathesis(request):
    """Schemathesis 4.32's lazy schemas name each operation's subtest by rewriting the node's
    ``_nodeid``, which pytest 9.2 replaced with ``_id`` (``nodeid`` reads it): the attribute it
    reads first is put back (names in reports stay the test's own)."""
    if not hasattr(request.node, "_nodeid"):
        request.node._nodeid = request.node.nodeid


schema = schemathesis.pytest.from_fixture("api_schema")
if os.environ.get("FUZZ_ONLY"):  # a run by hand: the operations whose "METHOD /path" matches
    schema = schema.include(name_regex=os.environ["FUZZ_ONLY"])


def call_and_validate(case, role: Auth, name: str) -> None:
    phase = case.meta.phase.name.value if case.meta is not None else "unknown"
    CASES[f"{name}/{phase}"] += 1
    response = case.call_and_validate(headers=role.headers(case))
    NOT_FOUND[f"{name}/{phase}"] += response.status_code == 404


@schema.parametrize()
@HYPOTHESIS
def test_every_operation_answers_a_member_as_its_schema_says_in_every_phase(case, member):
    call_and_validate(case, member, "member")


@schema.parametrize()
@HYPOTHESIS
def test_every_operation_answers_a_moderator_as_its_schema_says_in_every_phase(case, moderator):
    call_and_validate(case, moderator, "moderator")


def test_sequences_that_follow_the_schemas_links_answer_as_it_says(api_schema, role):
    label = f"{role.user.username.removeprefix('fuzz-')}/stateful"
    # Failures are collected, not raised. Hypothesis replays a scenario's start against a server
    # whose data the first run changed (a comment deleted, a token revoked): the same draws then
    # meet other answers, and it gives up on the round as Flaky, which says nothing about the
    # service. As Schemathesis' own runner does, such a round ends and another one starts.
    failures: dict[str, str] = {}
    scenarios = 0

    class Sequences(api_schema.as_state_machine()):  # type: ignore[misc]
        def setup(self):
            nonlocal scenarios
            scenarios += 1

        def before_call(self, case):
            CASES[label] += 1
            case.headers = {**(case.headers or {}), **role.headers(case)}

        def validate_response(self, response, case, **kwargs):
            NOT_FOUND[label] += response.status_code == 404
            try:
                super().validate_response(response, case, **kwargs)
            except FailureGroup as exc:
                failures.setdefault(f"{case.method.upper()} {case.path} -> {response.status_code}", str(exc))

    for _ in range(STATEFUL_ROUNDS):
        if scenarios >= STATEFUL_EXAMPLES:
            break
        try:
            Sequences.run(
                settings=hypothesis_settings(
                    HYPOTHESIS,
                    derandomize=False,
                    max_examples=STATEFUL_EXAMPLES - scenarios,
                    stateful_step_count=STATEFUL_STEPS,
                )
            )
        except Flaky:
            ROUNDS_CUT_SHORT[label] += 1
        except AssertionError as exc:
            if not is_inconsistent_replay(exc):
                raise
            ROUNDS_CUT_SHORT[label] += 1
    assert not failures, "\n\n".join(f"{name}\n{text}" for name, text in failures.items())
    assert scenarios >= min(STATEFUL_EXAMPLES, 10), scenarios
