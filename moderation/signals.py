"""What moderation's services tell the app's outer layer (``receivers.py``), which starts the
work that follows in the background: the services never start a task themselves, so the
modules import one way (receivers and tasks -> services)."""

from django.dispatch import Signal

# A word was added to a list (``site_id``: its site, None for the global list), after the
# commit: the recent comments are to be checked against it.
word_added = Signal()
