"""The OpenAPI schema (``/api/v1/schema/``) is as strict as the validation behind it, documents
what every operation may answer, and links operations to the objects others return, so clients
and fuzzers (tests/api/test_fuzzing.py) reach real objects."""

from __future__ import annotations

import functools

import pytest
from django.conf import settings

from comments.ids import MAX_ID
from comments.middleware import MAX_URL_BYTES

METHODS = ("get", "put", "post", "patch", "delete")


@functools.cache
def _openapi() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


@pytest.fixture
def openapi(db) -> dict:
    return _openapi()


def operations(openapi) -> dict[str, dict]:
    return {
        operation["operationId"]: {**operation, "_name": f"{method.upper()} {path}"}
        for path, methods in openapi["paths"].items()
        for method, operation in methods.items()
        if method in METHODS
    }


def component(openapi, name: str) -> dict:
    return openapi["components"]["schemas"][name]


def body_schema(openapi, operation_id: str) -> dict:
    ref = operations(openapi)[operation_id]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    return component(openapi, ref.rsplit("/", 1)[-1])


def parameter(openapi, operation_id: str, name: str) -> dict:
    (found,) = [p for p in operations(openapi)[operation_id].get("parameters", []) if p["name"] == name]
    return found


# --- as strict as the validation -------------------------------------------------------------


@pytest.mark.parametrize(
    "operation_id", ["subjects_comments_create", "comments_partial_update", "guest_comments_create"]
)
def test_a_comment_body_is_described_as_the_service_takes_it(openapi, operation_id):
    body = body_schema(openapi, operation_id)
    assert "body" in body["required"]
    described = body["properties"]["body"]
    assert described["type"] == "string"
    assert described["maxLength"] == settings.COMMENTS_MAX_BODY == 5000
    assert described["minLength"] == 1
    assert described["pattern"] == r"\S"
    assert "invisible" in described["description"]


def test_an_edit_requires_its_body_as_the_view_does(openapi):
    operation = operations(openapi)["comments_partial_update"]
    assert operation["requestBody"]["required"] is True
    assert body_schema(openapi, "comments_partial_update")["required"] == ["body"]


def test_counts_takes_one_to_a_hundred_keys_of_a_subjects_length(openapi):
    keys = parameter(openapi, "counts_retrieve", "key")
    assert keys["required"] is True
    assert keys["schema"]["minItems"] == 1 and keys["schema"]["maxItems"] == 100
    assert keys["schema"]["items"]["maxLength"] == 255 and keys["schema"]["items"]["minLength"] == 1
    assert parameter(openapi, "counts_retrieve", "site")["schema"]["maxLength"] == 64


def test_ids_in_paths_are_integers_of_the_contracts_range(openapi):
    seen = set()
    for operation in operations(openapi).values():
        for p in operation.get("parameters", []):
            if p["in"] == "path" and p["name"].endswith("_id"):
                seen.add(p["name"])
                assert p["schema"] == {"type": "integer", "format": "int64", "minimum": 1, "maximum": MAX_ID}, (
                    operation["_name"],
                    p,
                )
    assert {"subject_id", "comment_id", "user_id", "task_id", "word_id", "sanction_id", "notification_id"} <= seen


def test_site_keys_in_paths_are_slugs_of_a_sites_length(openapi):
    for operation_id in ("sites_signin_retrieve", "sites_comments_recent_retrieve", "sites_comments_top_retrieve"):
        schema = parameter(openapi, operation_id, "site_key")["schema"]
        assert schema == {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$", "maxLength": 64}


def test_text_that_is_trimmed_and_may_not_be_blank_needs_more_than_whitespace(openapi):
    subject = body_schema(openapi, "subjects_create")["properties"]
    assert subject["key"]["pattern"] == r"\S" and subject["site"]["pattern"] == r"\S"
    assert "pattern" not in subject["title"].get("oneOf", [subject["title"]])[0]  # may be blank
    password = body_schema(openapi, "auth_token_create")["properties"]["password"]
    assert "pattern" not in password  # kept as typed: spaces are a password's own
    assert parameter(openapi, "subjects_lookup_retrieve", "key")["schema"]["pattern"] == r"\S"


def test_the_guest_honeypot_must_be_left_empty(openapi):
    assert body_schema(openapi, "guest_comments_create")["properties"]["website"]["maxLength"] == 0


def test_sign_in_names_only_the_providers_the_service_has(settings, db):
    settings.ACCOUNTS_OIDC_PROVIDERS = {}
    from drf_spectacular.generators import SchemaGenerator

    def oidc() -> dict:
        schema = SchemaGenerator().get_schema(request=None, public=True)
        return component(schema, "PatchedSiteSigninInRequest")["properties"]["oidc"]

    assert oidc()["maxItems"] == 0
    settings.ACCOUNTS_OIDC_PROVIDERS = {"corp": {}, "google": {}}
    schema = SchemaGenerator().get_schema(request=None, public=True)
    items = component(schema, "PatchedSiteSigninInRequest")["properties"]["oidc"]["items"]
    if "$ref" in items:  # drf-spectacular makes a component of every enum
        items = component(schema, items["$ref"].rsplit("/", 1)[-1])
    assert items["enum"] == ["corp", "google"]


def test_email_preferences_refuse_unknown_kinds_in_the_schema_too(openapi):
    assert component(openapi, "EmailPreferencesInRequest")["additionalProperties"] is False


def test_lists_take_a_cursor_that_fits_in_a_url(openapi):
    cursor = parameter(openapi, "subjects_comments_retrieve", "cursor")["schema"]
    # A cursor's few separators may be percent-encoded; the rest of the query fits beside it.
    assert cursor["maxLength"] + 1024 <= MAX_URL_BYTES


# --- what every operation may answer ----------------------------------------------------------


def test_every_operation_documents_the_answers_it_may_give_before_its_view_runs(openapi):
    for operation in operations(openapi).values():
        responses = operation["responses"]
        assert "414" in responses, operation["_name"]
        if "requestBody" in operation:
            assert {"413", "415"} <= set(responses), operation["_name"]
        for code in ("413", "414", "415"):
            if code in responses:
                ref = responses[code]["content"]["application/json"]["schema"]["$ref"]
                assert ref == "#/components/schemas/ErrorOut"


def test_claiming_a_task_is_described_as_it_answers(openapi):
    answer = operations(openapi)["moderation_tasks_claim_update"]["responses"]["200"]
    assert answer["content"]["application/json"]["schema"]["$ref"] == "#/components/schemas/TaskClaimOut"
    claim = component(openapi, "TaskClaimOut")
    assert set(claim["properties"]) == set(claim["required"]) == {"id", "claimed_by", "claim_expires_at"}


# --- links ----------------------------------------------------------------------------------------


def links(openapi, operation_id: str, status: str) -> dict:
    return operations(openapi)[operation_id]["responses"][status].get("links", {})


@pytest.mark.parametrize("status", ["200", "201"])
def test_a_subject_made_or_found_links_to_its_comments(openapi, status):
    made = links(openapi, "subjects_create", status)
    for target in ("subjects_comments_create", "subjects_comments_retrieve", "subjects_retrieve"):
        assert made[target] == {"operationId": target, "parameters": {"subject_id": "$response.body#/id"}}


def test_a_comment_posted_links_to_what_can_be_done_with_it(openapi):
    posted = links(openapi, "subjects_comments_create", "201")
    for target in (
        "comments_like_update",
        "comments_like_destroy",
        "comments_reports_create",
        "comments_replies_retrieve",
        "comments_partial_update",
        "comments_destroy",
        "moderation_comments_actions_create",
    ):
        assert posted[target]["parameters"] == {"comment_id": "$response.body#/id"}, target
    assert posted["users_follow_update"]["parameters"] == {"user_id": "$response.body#/author/id"}


def test_every_link_names_an_operation_and_exactly_its_path_parameters(openapi):
    by_id = operations(openapi)
    count = 0
    for operation in by_id.values():
        for status, response in operation["responses"].items():
            for name, link in response.get("links", {}).items():
                count += 1
                target = by_id[link["operationId"]]
                path_parameters = {p["name"] for p in target.get("parameters", []) if p["in"] == "path"}
                assert set(link["parameters"]) == path_parameters, (operation["_name"], status, name)
                for expression in link["parameters"].values():
                    assert expression.startswith("$response.body#/"), expression
    assert count > 100
