"""An import's authors: each a user of the site, found by their external id (an
``ExternalIdentity``) or created with it on first sight."""

from __future__ import annotations

import hashlib

from django.contrib.auth.hashers import make_password

from comments.models import ExternalIdentity, Site, User
from comments.names import clean_display_name

from .staging import Staged
from .summary import ImportSummary, remember


class Authors:
    """The users of one import's authors, remembered between its batches."""

    def __init__(self, site: Site, summary: ImportSummary):
        self.site, self.summary = site, summary
        self.users: dict[str, int] = {}  # external id -> user id

    def ids(self, rows: list[Staged]) -> dict[str, int]:
        """The user of each author (external id), created with its identity on first sight."""
        wanted: dict[str, Staged] = {}
        for row in rows:  # an author as their first comment of the batch names them
            if row.author_id:
                wanted.setdefault(row.author_id, row)
        found = {eid: self.users[eid] for eid in wanted if eid in self.users}
        missing = {eid: r for eid, r in wanted.items() if eid not in found}
        if missing:
            found.update(
                ExternalIdentity.objects.filter(site=self.site, external_id__in=list(missing)).values_list(
                    "external_id", "user_id"
                )
            )
            new = {eid: r for eid, r in missing.items() if eid not in found}
            if new:
                found.update(self._create(new))
            for external_id in missing:
                remember(self.users, external_id, found[external_id])
        return found

    def _create(self, authors: dict[str, Staged]) -> dict[str, int]:
        """Users for authors new to the site: like the local twin of an SSO user (no usable
        password; an ``ExternalIdentity`` says who they are), so a later sign-in by the host
        with the same id is the same user."""
        usernames = {eid: username(self.site, eid) for eid in authors}
        unusable = make_password(None)
        User.objects.bulk_create(
            [
                User(
                    username=usernames[eid],
                    display_name=clean_display_name(r.author_name),  # the readers' fallbacks done, kept as every name
                    avatar_url=r.author_avatar[:1000],
                    password=unusable,
                )
                for eid, r in authors.items()
            ],
            ignore_conflicts=True,  # left by a run that failed before it wrote the identity
        )
        user_ids = dict(User.objects.filter(username__in=list(usernames.values())).values_list("username", "pk"))
        self.summary.users_created += len(authors)
        ExternalIdentity.objects.bulk_create(
            [
                ExternalIdentity(
                    site=self.site, external_id=eid, user_id=user_ids[usernames[eid]], email=r.author_email[:254]
                )
                for eid, r in authors.items()
            ],
            ignore_conflicts=True,  # an SSO sign-in made it meanwhile: its user is read back below
        )
        return dict(
            ExternalIdentity.objects.filter(site=self.site, external_id__in=list(authors)).values_list(
                "external_id", "user_id"
            )
        )


def username(site: Site, external_id: str) -> str:
    digest = hashlib.sha256(f"{site.pk}:{external_id}".encode()).hexdigest()[:20]
    return f"imp-{site.key[:40]}-{digest}"
