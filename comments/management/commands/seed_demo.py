"""Demo data for the embedded default: a site, users, and one subject per display mode with
realistic nested threads, including a 100-floor stacked chain. Posts go through
``comment_create``, so paths, floors and counters are exactly what real use produces."""

import random

from django.core.management.base import BaseCommand
from django.db import transaction
from django.test.utils import override_settings

from comments import services
from comments.models import Mode, Site, Subject, User

DEMO_PASSWORD = "demo-pass-123"
SSO_SECRET = "demo-sso-secret"
NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "oscar"]
OPENERS = [
    "Great write-up, thanks for sharing.",
    "I'm not convinced by the second section — the numbers seem **off** to me.",
    "Has anyone tried this with a bigger dataset? Curious how it scales.",
    "This matches what we saw in production last year.",
    "Small nit: the link in paragraph three is broken. See https://example.com/docs for the right one.",
    "Bookmarking this. The part about caching is *exactly* what I needed.",
    "Counterpoint: simpler designs usually win in the long run.",
    "Could you share the benchmark script?",
    "我觉得这个方案很有意思，尤其是缓存的部分。",
    "Finally someone explains materialized paths clearly!",
]
REPLIES = [
    "Agreed, and I'd add that monitoring matters as much as the design.",
    "Not sure — which version were you on?",
    "Source? I'd like to read more.",
    "+1, same experience here.",
    "That's fair, but it depends on the workload.",
    "Can you elaborate on that?",
    "Ha, I made the same mistake once.",
    "This is the way.",
    "同意楼上的观点。",
    "Here is a snippet: `SELECT 1;`",
]


class Command(BaseCommand):
    help = "Create demo data: a site, users and a subject in each display mode."

    def add_arguments(self, parser):
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, **options):
        base = options["base_url"].rstrip("/")
        if Site.objects.filter(key="demo").exists():
            self.stdout.write("Demo data already present.")
        else:
            # The demo's history is written in seconds by a few users from a small phrasebook:
            # the "same text again within minutes" spam signal would hold most of it.
            with transaction.atomic(), override_settings(MODERATION_REPEAT_WINDOW=0):
                self._seed()
        self._print_urls(base)

    def _seed(self):
        rng = random.Random(42)
        users = []
        for name in NAMES:
            user = User.objects.create_user(name, password=DEMO_PASSWORD, display_name=name.capitalize())
            users.append(user)
        moderator = User.objects.create_user(
            "moderator", password=DEMO_PASSWORD, display_name="Moderator", is_staff=True, is_superuser=True
        )
        site = Site.objects.create(
            key="demo", name="Demo blog", sso_secret=SSO_SECRET,
            allowed_origins=["http://127.0.0.1:8001", "http://localhost:8001"],
        )
        site.moderators.add(moderator)

        def subject(key, title, mode):
            s, _ = services.subject_get_or_create(site=site, key=key, title=title, url=f"http://127.0.0.1:8001/{key}")
            Subject.objects.filter(pk=s.pk).update(mode=mode)
            s.mode = mode
            return s

        def thread(s, roots, max_replies, max_depth):
            for _ in range(roots):
                root = services.comment_create(subject=s, author=rng.choice(users), body=rng.choice(OPENERS))
                frontier = [root]
                for _ in range(rng.randint(0, max_replies)):
                    parent = rng.choice(frontier)
                    reply = services.comment_create(
                        subject=s, author=rng.choice(users), body=rng.choice(REPLIES), reply_to_id=parent.id
                    )
                    if reply.depth < max_depth:
                        frontier.append(reply)

        thread(subject("article:two-level", "Two-level discussion (hot first)", Mode.TWO_LEVEL), 30, 12, 4)
        thread(subject("article:flat", "A flat discussion", Mode.FLAT), 25, 4, 2)
        stacked = subject("article:stacked", "Stacked floors (盖楼)", Mode.STACKED)
        thread(stacked, 10, 6, 6)
        parent = services.comment_create(subject=stacked, author=users[0], body="Floor 1: let's build the tallest building here! 盖楼!")
        for floor in range(2, 101):
            parent = services.comment_create(
                subject=stacked, author=users[floor % len(users)], body=f"Floor {floor}: still climbing.", reply_to_id=parent.id
            )

    def _print_urls(self, base):
        subjects = Subject.objects.filter(site__key="demo").order_by("pk")
        self.stdout.write("")
        self.stdout.write(f"Comment service: {base}/")
        self.stdout.write(f"  API docs:      {base}/api/v1/docs/")
        self.stdout.write(f"  Admin:         {base}/admin/   (moderator / {DEMO_PASSWORD})")
        self.stdout.write(f"  Console:       {base}/console/   (moderator / {DEMO_PASSWORD}: the review queue)")
        for s in subjects:
            self.stdout.write(f"  {s.mode:<10} {base}/api/v1/subjects/{s.pk}/comments   ({s.comment_count} comments)")
        self.stdout.write(f"Demo users: {', '.join(NAMES)} (password {DEMO_PASSWORD}); site 'demo', SSO secret {SSO_SECRET}")
        for s in subjects:
            self.stdout.write(f"  widget     {base}/embed/?site=demo&key={s.key}")
        host = "http://127.0.0.1:8001"
        self.stdout.write(f"Demo host page:  {host}/   (`manage.py rundemo` serves it beside the service; pick a user to sign in by SSO)")
