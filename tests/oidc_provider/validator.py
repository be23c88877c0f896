"""The claims the test provider vouches for: a name and a verified email address."""

from oauth2_provider.oauth2_validators import OAuth2Validator


class Validator(OAuth2Validator):
    def get_additional_claims(self, request):
        user = request.user
        return {
            "name": user.get_full_name(),
            "preferred_username": user.username,
            "email": user.email,
            "email_verified": True,
        }
