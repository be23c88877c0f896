"""drf-spectacular extensions for our own classes (imported by CommentsConfig.ready), the
classes whose docstrings never describe an operation, and the schema's last pass
(``postprocess``): every schema as strict as the validation behind it, the answers every
operation may give, and the links between operations."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.extensions import (
    OpenApiAuthenticationExtension,
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.plumbing import get_lib_doc_excludes
from rest_framework import serializers

from ..ids import MAX_ID
from ..middleware import MAX_URL_BYTES
from ..urlconverters import IdConverter
from .fields import StrictCharField


def doc_excludes() -> list[type]:
    """drf-spectacular describes an operation by its method's docstring, else by the first
    docstring up its view's classes short of these. ``ApiView``'s is about how every view is
    built, so it joins the library's bases: left to inherit it, every operation without words of
    its own was described as the base class (``SPECTACULAR_SETTINGS["GET_LIB_DOC_EXCLUDES"]``)."""
    from .views import ApiView

    return [*get_lib_doc_excludes(), ApiView]


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "comments.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "Token from /api/v1/auth/token or /api/v1/auth/sso"}


# --- fields and serializers as strict as their validation ----------------------------------

# A string of something more than whitespace: what a trimmed, non-blank CharField takes (DRF
# strips it, then refuses it empty).
NOT_BLANK = r"\S"


class NonBlankCharFieldExtension(OpenApiSerializerFieldExtension):
    """A request's trimmed, non-blank text field says it needs more than whitespace."""

    target_class = "rest_framework.fields.CharField"
    match_subclasses = True

    def map_serializer_field(self, auto_schema, direction):
        field = self.target
        schema = auto_schema._map_serializer_field(field, direction, bypass_extensions=True)
        plain = type(field) in (serializers.CharField, StrictCharField)
        if plain and direction == "request" and field.trim_whitespace and not field.allow_blank:
            schema["pattern"] = NOT_BLANK
        return schema


class CommentBodyFieldExtension(OpenApiSerializerFieldExtension):
    """A comment's body as the service takes it (``services.check_body``)."""

    target_class = "comments.api.fields.CommentBodyField"
    priority = 1

    def map_serializer_field(self, auto_schema, direction):
        return {
            "type": "string",
            "minLength": 1,
            "maxLength": settings.COMMENTS_MAX_BODY,
            "pattern": NOT_BLANK,
            "description": (
                f"Markdown, at most {settings.COMMENTS_MAX_BODY} characters once trimmed; refused "
                "when it shows nothing (only whitespace and invisible characters such as "
                "zero-width spaces and joiners)."
            ),
        }


class ProviderKeysFieldExtension(OpenApiSerializerFieldExtension):
    """The OpenID Connect providers the service has, by key (``ACCOUNTS_OIDC_PROVIDERS``)."""

    target_class = "comments.api.fields.ProviderKeysField"

    def map_serializer_field(self, auto_schema, direction):
        providers = sorted(settings.ACCOUNTS_OIDC_PROVIDERS)
        if not providers:
            return {"type": "array", "items": {"type": "string"}, "maxItems": 0}
        return {"type": "array", "items": {"type": "string", "enum": providers}, "maxItems": self.target.max_length}


class ClosedObjectExtension(OpenApiSerializerExtension):
    """An object whose unknown keys are refused (``ClosedObjectIn``)."""

    target_class = "comments.api.serializers.ClosedObjectIn"
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_basic_serializer(self.target, direction)
        schema["additionalProperties"] = False
        return schema


# --- the last pass -------------------------------------------------------------------------

# A path's id (the "id" converter) is a JSON integer of the contract's range, not any 16 digits.
_ID_PATTERN = f"^{IdConverter.regex}$"
_ID_SCHEMA = {"type": "integer", "format": "int64", "minimum": 1, "maximum": MAX_ID}
# A site's key in a path: Django's slug converter, as long as Site.key may be.
_SITE_KEY_SCHEMA = {"type": "string", "pattern": "^[-a-zA-Z0-9_]+$", "maxLength": 64}

_ERROR = {"$ref": "#/components/schemas/ErrorOut"}


def _error_response(code: str, description: str) -> dict:
    return {"content": {"application/json": {"schema": _ERROR}}, "description": f"{code}: {description}"}


# What any operation may answer before its view runs (comments.middleware, DRF's parsing).
_URL_TOO_LONG = _error_response("uri_too_long", f"the URL is longer than {MAX_URL_BYTES} bytes")
_BODY_TOO_LARGE = _error_response("payload_too_large", "the body is larger than DATA_UPLOAD_MAX_MEMORY_SIZE")
_UNSUPPORTED_TYPE = _error_response("unsupported_media_type", "the body is not application/json")

# OpenAPI links: which values of an answer name the objects other operations take, by the name
# of their path parameter. Every operation whose path parameters are all among an answer's values
# is linked from it, so stateful clients (and fuzzers) follow real objects instead of guessing ids.
_SUBJECT = {"subject_id": "$response.body#/id", "site_key": "$response.body#/site"}
_COMMENT = {
    "comment_id": "$response.body#/id",
    "subject_id": "$response.body#/subject_id",
    "user_id": "$response.body#/author/id",
}
LINK_SOURCES: dict[str, tuple[tuple[str, ...], dict[str, str]]] = {
    "subjects_create": (("200", "201"), _SUBJECT),
    "subjects_lookup_retrieve": (("200",), _SUBJECT),
    "subjects_retrieve": (("200",), _SUBJECT),
    "subjects_comments_create": (("201",), _COMMENT),
    "comments_retrieve": (("200",), _COMMENT),
    "comments_partial_update": (("200",), _COMMENT),
    "subjects_comments_retrieve": (
        ("200",),
        {"comment_id": "$response.body#/items/0/id", "user_id": "$response.body#/items/0/author/id"},
    ),
    "comments_replies_retrieve": (("200",), {"comment_id": "$response.body#/items/0/id"}),
    "guest_comments_create": (
        ("201",),
        {
            "comment_id": "$response.body#/comment/id",
            "subject_id": "$response.body#/comment/subject_id",
            "user_id": "$response.body#/user/id",
        },
    ),
    "comments_reports_create": (("200", "201"), {"comment_id": "$response.body#/comment_id"}),
    "moderation_queue_retrieve": (
        ("200",),
        {"task_id": "$response.body#/items/0/id", "comment_id": "$response.body#/items/0/comment/id"},
    ),
    "moderation_tasks_claim_update": (("200",), {"task_id": "$response.body#/id"}),
    "moderation_words_create": (("201",), {"word_id": "$response.body#/id"}),
    "moderation_sanctions_create": (("201",), {"sanction_id": "$response.body#/id"}),
    "notifications_retrieve": (("200",), {"notification_id": "$response.body#/items/0/id"}),
    "me_retrieve": (("200",), {"user_id": "$response.body#/id"}),
    "auth_token_create": (("200",), {"user_id": "$response.body#/user/id"}),
    "auth_sso_create": (("200",), {"user_id": "$response.body#/user/id"}),
}


def postprocess(result, generator, request, public):
    """drf-spectacular's last pass over the schema (``POSTPROCESSING_HOOKS``)."""
    operations = [
        operation
        for methods in result.get("paths", {}).values()
        for method, operation in methods.items()
        if method in ("get", "put", "post", "patch", "delete")
    ]
    for operation in operations:
        _strict_path_parameters(operation)
        _common_responses(operation)
    _whole_patch_bodies(result, generator, operations)
    _add_links(operations)
    return result


def _strict_path_parameters(operation: dict) -> None:
    for parameter in operation.get("parameters", []):
        if parameter.get("in") != "path":
            continue
        if parameter.get("schema", {}).get("pattern") == _ID_PATTERN:
            parameter["schema"] = dict(_ID_SCHEMA)
        elif parameter["name"] == "site_key":
            parameter["schema"] = dict(_SITE_KEY_SCHEMA)


def _common_responses(operation: dict) -> None:
    responses = operation.setdefault("responses", {})
    responses.setdefault("414", _URL_TOO_LONG)
    if "requestBody" in operation:
        responses.setdefault("413", _BODY_TOO_LARGE)
        responses.setdefault("415", _UNSUPPORTED_TYPE)


def _whole_patch_bodies(result: dict, generator, operations: list[dict]) -> None:
    """A PATCH body's required fields stay required: every view validates its whole body
    (``views.validated``), where drf-spectacular describes a PATCH as DRF's partial update."""
    schemas = result.get("components", {}).get("schemas", {})
    required_by_name = {}
    for component in generator.registry._components.values():
        serializer = component.object
        if component.name in schemas and isinstance(serializer, serializers.Serializer) and serializer.partial:
            required = [name for name, field in serializer.fields.items() if field.required and not field.read_only]
            if required:
                required_by_name[component.name] = required
    for name, required in required_by_name.items():
        schemas[name]["required"] = required
    for operation in operations:
        body = operation.get("requestBody")
        if body is None:
            continue
        for media in body.get("content", {}).values():
            if media.get("schema", {}).get("$ref", "").rsplit("/", 1)[-1] in required_by_name:
                body["required"] = True


def _add_links(operations: list[dict]) -> None:
    targets = []
    for operation in operations:
        path_parameters = {p["name"] for p in operation.get("parameters", []) if p.get("in") == "path"}
        if path_parameters and "operationId" in operation:
            targets.append((operation["operationId"], path_parameters))
    by_id = {operation.get("operationId"): operation for operation in operations}
    for source, (statuses, values) in LINK_SOURCES.items():
        found = by_id.get(source)
        if found is None:
            continue
        links = {
            target: {"operationId": target, "parameters": {name: values[name] for name in sorted(names)}}
            for target, names in targets
            if names <= set(values)
        }
        for status in statuses:
            response = found.get("responses", {}).get(status)
            if response is not None and links:
                response["links"] = dict(links)
