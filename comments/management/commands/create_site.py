from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from comments import services
from comments.models import Mode, ModerationPolicy, Site, User
from comments.origins import parse_origins

SIGNIN_METHODS = {"sso", "email", "guests"}


class Command(BaseCommand):
    help = "Create (or update) a site that embeds the widget."

    def add_arguments(self, parser):
        parser.add_argument("key", help="public slug of the site, e.g. 'myblog'")
        parser.add_argument("--name", required=True)
        parser.add_argument("--origin", action="append", default=[], help="allowed origin (repeatable)")
        parser.add_argument("--sso-secret", default="", help="HMAC secret for host-site single sign-on")
        parser.add_argument("--mode", choices=Mode.values, default=Mode.TWO_LEVEL)
        parser.add_argument("--moderation", choices=ModerationPolicy.values, default=ModerationPolicy.POST)
        parser.add_argument(
            "--guest-moderation",
            choices=ModerationPolicy.values,
            default=ModerationPolicy.PRE,
            help="how guests' comments are moderated (with --signin ...,guests): pre (held for review) or post",
        )
        parser.add_argument(
            "--signin",
            default="sso,email",
            help="how readers may sign in, comma-separated: sso (the host's payload), email (a link), guests, "
            "and the keys of the service's OpenID Connect providers (ACCOUNTS_OIDC_PROVIDERS: github, google...)",
        )
        parser.add_argument(
            "--link-email",
            action="store_true",
            help="a provider's account joins the user its verified email address is known for (else a user of its own)",
        )
        parser.add_argument(
            "--moderator", action="append", default=[], help="username of a site moderator (repeatable)"
        )

    def handle(self, *args, **options):
        from django.core.exceptions import ValidationError
        from django.core.validators import validate_slug

        try:
            validate_slug(options["key"])
        except ValidationError:
            raise CommandError("key must be a slug: letters, digits, '-' and '_'") from None
        allowed_origins, errors = parse_origins(options["origin"])
        if errors:
            raise CommandError(" ".join(errors))
        signin = [m.strip() for m in options["signin"].split(",") if m.strip()]
        known = SIGNIN_METHODS | set(settings.ACCOUNTS_OIDC_PROVIDERS)
        if set(signin) - known:
            raise CommandError(
                f"--signin takes {', '.join(sorted(known))}, not {', '.join(sorted(set(signin) - known))}"
            )
        moderators = []
        for username in options["moderator"]:
            user = User.objects.filter(username=username).first()
            if user is None:
                raise CommandError(f"no user named {username!r}")
            moderators.append(user)
        site = Site.objects.filter(key=options["key"]).first()
        created = site is None
        if site is None:
            site = Site(key=options["key"])
        for field, value in {
            "name": options["name"],
            "allowed_origins": allowed_origins,
            "sso_secret": options["sso_secret"],
            "default_mode": options["mode"],
            "moderation": options["moderation"],
            "signin_sso": "sso" in signin,
            "signin_email": "email" in signin,
            "signin_guests": "guests" in signin,
            "signin_oidc": [m for m in dict.fromkeys(signin) if m not in SIGNIN_METHODS],
            "signin_link_email": options["link_email"],
            "guest_moderation": options["guest_moderation"],
        }.items():
            setattr(site, field, value)
        services.site_store(site=site, moderators=moderators)
        self.stdout.write(f"{'created' if created else 'updated'} site {site.key} (id {site.pk})")
