"""How the GDPR commands (``export_user_data``, ``erase_user``) find the person a request names:
by id or username, by e-mail, by a site's SSO user id, or by a name that lists candidates."""

from __future__ import annotations

from django.core.management.base import CommandError, CommandParser

from comments.models import User
from portability import queries


def add_person_arguments(parser: CommandParser) -> None:
    parser.add_argument("user", nargs="?", help="user id or username")
    found_by = parser.add_mutually_exclusive_group()
    found_by.add_argument("--email", help="the person's e-mail address (any they signed in or commented with)")
    found_by.add_argument("--sso", metavar="SITE:ID", help="a site's key and the user id its SSO payload gives")
    found_by.add_argument(
        "--name", help="part of a display name or username: lists the candidates, acts on none (then give the id)"
    )


def person(options: dict) -> User:
    """The one user the options name; a ``CommandError`` listing the candidates when there are
    none, several, or a name search (which never acts)."""
    given = [name for name in ("email", "sso", "name") if options.get(name)]
    if bool(options.get("user")) == bool(given):
        raise CommandError("name the person by a user id or username, or by one of --email, --sso, --name")
    if options.get("user"):
        return _by_id_or_username(options["user"])
    if options.get("email"):
        users, asked = queries.users_find(email=options["email"]), f"e-mail {options['email']!r}"
    elif options.get("sso"):
        site_key, _, external_id = options["sso"].partition(":")
        if not site_key or not external_id:
            raise CommandError(f"--sso {options['sso']!r}: SITE:ID expected, e.g. blog:42")
        users, asked = queries.users_find(site_key=site_key, external_id=external_id), f"SSO id {options['sso']!r}"
    else:
        users, asked = queries.users_find(name=options["name"]), f"name {options['name']!r}"
        raise CommandError(_candidates(users, asked) + "\nrun again with the user's id")
    if len(users) == 1:
        return users[0]
    raise CommandError(_candidates(users, asked) + ("\nrun again with the user's id" if users else ""))


def _by_id_or_username(value: str) -> User:
    user = User.objects.filter(pk=int(value)).first() if value.isdigit() else None
    user = user or User.objects.filter(username=value).first()
    if user is None:
        raise CommandError(f"unknown user {value!r}")
    return user


def _candidates(users: list[User], asked: str) -> str:
    if not users:
        return f"no user with {asked}"
    comments = queries.users_comment_counts(user_ids=[u.pk for u in users])
    shown = f" (the first {len(users)})" if len(users) >= queries.CANDIDATES_SHOWN else ""
    lines = [f"{len(users)} users with {asked}{shown}:"]
    for user in users:
        state = "" if user.is_active else ", closed"
        guest = ", guest" if user.is_guest else ""
        lines.append(
            f"  id {user.pk}: {user.username!r}, shown as {user.display_name or user.username!r}, "
            f"e-mail {user.email or '-'}, joined {user.date_joined:%Y-%m-%d}, "
            f"{comments.get(user.pk, 0)} comment(s){guest}{state}"
        )
    return "\n".join(lines)
