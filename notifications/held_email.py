"""What a held comment's email shows of it (``mail`` builds the message): why it was held, in
words, its text, and the links to decide on it, made for the recipient and the comment's open
review task (``decision_links``)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.utils.translation import gettext as _

from .decision_links import DECISIONS, DecisionLink, decision_url
from .queries import excerpt

HELD_BODY_CHARACTERS = 2000  # of a held comment's text, quoted whole in most cases


def held_reasons(reasons: list[str]) -> list[str]:
    """Why a comment was held (its review task's reasons), in words, in the active language."""
    said = []
    for reason in reasons:
        kind, _colon, detail = reason.partition(":")
        if reason == "policy:pre":
            said.append(_("the site reviews every comment first"))
        elif reason == "policy:guests":
            said.append(_("a guest's comment, which the site reviews first"))
        elif kind == "word":
            said.append(_("the word “%(word)s”") % {"word": detail})
        elif kind == "spam":
            said.append(_("looks like spam (%(check)s)") % {"check": detail})
        elif kind == "report":
            said.append(_("reported by readers (%(reason)s)") % {"reason": detail})
        else:
            said.append(reason)
    return said


def held_item(*, row: dict, task_id: int, reasons: list[str], body: str) -> dict:
    """The parts of a ``held`` row's message beyond its headline and author (``row``: the
    sender's row of the notification, its open task ``task_id`` with its ``reasons``)."""
    links = {
        f"{decision}_url": decision_url(
            DecisionLink(
                moderator_id=row["recipient_id"],
                site_id=row["site_id"],
                comment_id=row["comment_id"],
                task_id=task_id,
                decision=decision,
            )
        )
        for decision in DECISIONS
    }
    page = row["subject__url"] or ""
    return {
        **links,
        "reasons": held_reasons(reasons),
        "body": excerpt(body, length=HELD_BODY_CHARACTERS),
        "console_url": f"{settings.NOTIFICATIONS_BASE_URL}/console/?{urlencode({'site': row['site__key'] or ''})}",
        # A held comment is on no page yet: its entry in the console's queue is where it is seen.
        "url": f"{settings.NOTIFICATIONS_BASE_URL}/console/tasks/{task_id}/",
        "page": page if page.startswith(("https://", "http://")) else "",
    }
