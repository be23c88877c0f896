"""drf-spectacular extensions for our own classes (imported by CommentsConfig.ready), and the
classes whose docstrings never describe an operation."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.plumbing import get_lib_doc_excludes


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
