"""Input of the moderation console's pages: validation only; every rule lives in the services
and queries these feed."""

from __future__ import annotations

from datetime import timedelta

from django import forms
from django.utils.translation import gettext_lazy as _

from comments.ids import MAX_ID

from .actions import ACTIONS
from .models import SanctionKind, TaskState, WordAction
from .queries import REASON_KINDS

AGES = {"1h": timedelta(hours=1), "24h": timedelta(hours=24), "7d": timedelta(days=7)}


class QueueFilterForm(forms.Form):
    """The queue's filters (a GET form); every field may be left out."""

    # Any key: the query itself refuses a site the user does not moderate (403) or that does
    # not exist (404), the same rule as the API's.
    site = forms.CharField(label=_("Site"), required=False, max_length=64)
    state = forms.ChoiceField(
        label=_("State"),
        required=False,
        choices=[(TaskState.OPEN, _("Open")), (TaskState.DONE, _("Done"))],
    )
    reason = forms.ChoiceField(
        label=_("Reason"),
        required=False,
        choices=[
            ("", _("Any reason")),
            *(
                (kind, label)
                for kind, label in (
                    ("report", _("Reports")),
                    ("word", _("Word list")),
                    ("spam", _("Spam signals")),
                    ("policy", _("Pre-moderation")),
                )
                if kind in REASON_KINDS
            ),
        ],
    )
    age = forms.ChoiceField(
        label=_("Age"),
        required=False,
        choices=[
            ("", _("Any age")),
            ("1h", _("Older than 1 hour")),
            ("24h", _("Older than 24 hours")),
            ("7d", _("Older than 7 days")),
        ],
    )
    cursor = forms.CharField(required=False, max_length=2000, widget=forms.HiddenInput)

    def older_than(self) -> timedelta | None:
        return AGES.get(self.cleaned_data.get("age") or "")


class SiteForm(forms.Form):
    """The site a page is about (a GET parameter)."""

    site = forms.CharField(label=_("Site"), required=False, max_length=64)
    cursor = forms.CharField(required=False, max_length=2000, widget=forms.HiddenInput)


class IdListField(forms.Field):
    """Several ids from checkboxes of the same name."""

    widget = forms.MultipleHiddenInput
    default_error_messages = {"invalid": _("Not a comment id.")}

    def to_python(self, value):
        if not value:
            return []
        if isinstance(value, str):
            value = [value]
        ids = []
        for item in value:
            if not str(item).isdigit() or not 0 < int(item) <= MAX_ID:
                raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
            ids.append(int(item))
        return list(dict.fromkeys(ids))


class ActionForm(forms.Form):
    """One action on one or many comments. A row's own button sends ``do=<action>:<id>``;
    the bulk bar sends ``action`` and the checked ``comment`` boxes."""

    comment = IdListField(required=False)
    action = forms.ChoiceField(required=False, choices=[("", "")] + [(a, a) for a in sorted(ACTIONS)])
    do = forms.CharField(required=False, max_length=40)
    reason = forms.CharField(required=False, max_length=1000, strip=True)
    next = forms.CharField(required=False, max_length=2000)

    MAX_BULK = 100

    def clean(self):
        data = super().clean()
        assert data is not None  # Form.clean returns cleaned_data
        do = data.get("do")
        if do:
            action, _sep, comment = do.partition(":")
            if action not in ACTIONS or not comment.isdigit() or not 0 < int(comment) <= MAX_ID:
                raise forms.ValidationError(_("Unknown action."), code="invalid")
            data["action"], data["comment"] = action, [int(comment)]
        if not data.get("action"):
            raise forms.ValidationError(_("Choose an action."), code="required")
        if not data.get("comment"):
            raise forms.ValidationError(_("Select at least one comment."), code="required")
        if len(data["comment"]) > self.MAX_BULK:
            raise forms.ValidationError(
                _("At most %(n)d comments at once."), code="invalid", params={"n": self.MAX_BULK}
            )
        return data


class WordForm(forms.Form):
    # A site key, or "*" for every site (staff only: the service refuses anyone else).
    site = forms.CharField(label=_("Applies to"), max_length=64)
    word = forms.CharField(label=_("Word or phrase"), max_length=100)
    action = forms.ChoiceField(
        label=_("Action"),
        choices=[
            (WordAction.BLOCK, _("Block")),
            (WordAction.REVIEW, _("Send to review")),
            (WordAction.MASK, _("Mask")),
        ],
    )
    inside_words = forms.BooleanField(label=_("Also inside longer words"), required=False)

    GLOBAL = "*"


class SanctionForm(forms.Form):
    site = forms.CharField(label=_("Site"), max_length=64)
    user = forms.CharField(label=_("User (id or username)"), max_length=150)
    kind = forms.ChoiceField(
        label=_("Kind"),
        choices=[
            (SanctionKind.BAN, _("Ban")),
            (SanctionKind.SHADOW_BAN, _("Shadow ban")),
            (SanctionKind.TRUST, _("Trust")),
        ],
    )
    until = forms.DateTimeField(
        label=_("Until (UTC, empty: no end)"),
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"],
    )
    reason = forms.CharField(label=_("Reason"), max_length=500, required=False)
    next = forms.CharField(required=False, max_length=2000, widget=forms.HiddenInput)
