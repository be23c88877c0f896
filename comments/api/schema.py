"""drf-spectacular extensions for our own classes (imported by CommentsConfig.ready)."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "comments.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "Token from /api/v1/auth/token or /api/v1/auth/sso"}
