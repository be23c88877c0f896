"""The claims the test provider vouches for: a name, a verified email address and a picture."""

from oauth2_provider.oauth2_validators import OAuth2Validator

from tests.oidc_provider.provider import PICTURE


class Validator(OAuth2Validator):
    def get_additional_claims(self, request):
        user = request.user
        return {
            "name": user.get_full_name(),
            "preferred_username": user.username,
            "email": user.email,
            "email_verified": True,
            "picture": PICTURE,
        }
