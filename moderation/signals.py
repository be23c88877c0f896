"""What moderation's services tell the app's outer layer (``receivers.py``), which starts the
work that follows in the background: the services never start a task themselves, so the
modules import one way (receivers and tasks -> services)."""

from django.dispatch import Signal

# A word was added to a list (``site_id``: its site, None for the global list), after the
# commit: the recent comments are to be checked against it.
word_added = Signal()

# A reader reported a comment (``report_id``: the new report), after the commit; a repeat of
# the same reader's report sends nothing. For apps outside moderation (webhooks) to hand on.
report_created = Signal()
