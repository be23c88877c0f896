"""Demo data for the embedded default: a site, users, and one subject per display mode with
realistic nested threads, including a 100-floor stacked chain, written over the last two weeks;
then a handful of comments for the review queue. Posts go through ``comment_create``, so paths,
floors and counters are exactly what real use produces, and every check runs on them."""

import random
from datetime import timedelta

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction
from django.test.utils import override_settings
from django.utils import timezone

from comments import queries, services
from comments.models import Mode, Site, Subject, User

from .demo_host import DEMO_HOST_PORT, article_path, demo_origins

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
HISTORY_DAYS = 14
LINK_FARM = (
    "Best deals today: https://deals.example/1 https://deals.example/2 https://deals.example/3 https://deals.example/4"
)
PROMOTION = "Loved this! Follow my channel for daily tips."


class _History:
    """Creation times of the demo's history, in the order its comments are written: a few
    minutes to an hour apart from two weeks ago, so dates read like a real discussion's and
    nobody seems to post in a burst (the second check counts what an author wrote in the last
    minute)."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.moment = timezone.now() - timedelta(days=HISTORY_DAYS)

    def next(self):
        self.moment = min(self.moment + timedelta(minutes=self.rng.randint(10, 60)), timezone.now())
        return self.moment


class Command(BaseCommand):
    help = "Create demo data: a site, users and a subject in each display mode."

    def add_arguments(self, parser):
        parser.add_argument(
            "--base-url",
            help="the address the URLs printed start with (default: COMMENTS_PUBLIC_URL, http://127.0.0.1:8000 unless "
            "set; rundemo prints them again with the address it serves)",
        )

    def handle(self, *args, **options):
        base = (options["base_url"] or settings.COMMENTS_PUBLIC_URL).rstrip("/")
        if Site.objects.filter(key=queries.DEMO_SITE_KEY).exists():
            self.stdout.write("Demo data already present.")
        else:
            with transaction.atomic():
                # The demo's history is written in seconds by a few users from a small
                # phrasebook: the "same text again within minutes" spam signal would hold most
                # of it.
                with override_settings(MODERATION_REPEAT_WINDOW=0):
                    site, users, threads = self._seed()
                self._review_examples(site, users, threads)
        self._print_urls(base)

    def _seed(self):
        rng = random.Random(42)
        history = _History(rng)
        users = []
        for name in NAMES:
            user = User.objects.create_user(name, password=DEMO_PASSWORD, display_name=name.capitalize())
            users.append(user)
        moderator = User.objects.create_user(
            "moderator", password=DEMO_PASSWORD, display_name="Moderator", is_staff=True, is_superuser=True
        )
        host = demo_origins("127.0.0.1", DEMO_HOST_PORT)
        # The demo host page signs its readers in itself (its user picker): SSO alone.
        site = services.site_store(
            site=Site(
                key=queries.DEMO_SITE_KEY,
                name="Demo blog",
                sso_secret=SSO_SECRET,
                allowed_origins=host,
                signin_email=False,
            ),
            moderators=[moderator],
        )

        def subject(key, title, mode):
            # Its URL is its article on the demo host page, as a customer's subject is theirs.
            s, _ = services.subject_get_or_create(site=site, key=key, title=title, url=host[0] + article_path(key))
            Subject.objects.filter(pk=s.pk).update(mode=mode)
            s.mode = mode
            return s

        def post(s, author, body, reply_to_id=None):
            return services.comment_create(
                subject=s, author=author, body=body, reply_to_id=reply_to_id, created_at=history.next()
            )

        def thread(s, roots, max_replies, max_depth):
            """Top-level comments with replies under them; returns the top-level ones."""
            tops = []
            for _ in range(roots):
                root = post(s, rng.choice(users), rng.choice(OPENERS))
                tops.append(root)
                frontier = [root]
                for _ in range(rng.randint(0, max_replies)):
                    reply = post(s, rng.choice(users), rng.choice(REPLIES), reply_to_id=rng.choice(frontier).id)
                    if reply.depth < max_depth:
                        frontier.append(reply)
            return tops

        threads = {
            "two_level": thread(
                subject("article:two-level", "Two-level discussion (hot first)", Mode.TWO_LEVEL), 30, 12, 4
            ),
            "flat": thread(subject("article:flat", "A flat discussion", Mode.FLAT), 25, 4, 2),
        }
        stacked = subject("article:stacked", "Stacked floors (盖楼)", Mode.STACKED)
        threads["stacked"] = thread(stacked, 10, 6, 6)
        parent = post(stacked, users[0], "Floor 1: let's build the tallest building here! 盖楼!")
        for floor in range(2, 101):
            parent = post(stacked, users[floor % len(users)], f"Floor {floor}: still climbing.", reply_to_id=parent.id)
        return site, users, threads

    def _review_examples(self, site, users, threads):
        """What a moderator finds in the queue on a usual day, each through the path a real one
        takes: a link farm and a repeated promotion (held by the spam signals as they are
        posted), a comment reported by enough readers to be held, and one reported once (still
        published, waiting for its report to be dismissed or upheld). The demo command spans
        the product, so it uses moderation's service for reports; the comments app's own
        modules never import moderation."""
        from moderation.services import report_create

        spammer = next(user for user in users if user.username == "mallory")
        services.comment_create(subject=threads["two_level"][0].subject, author=spammer, body=LINK_FARM)
        for _ in range(2):
            services.comment_create(subject=threads["flat"][0].subject, author=spammer, body=PROMOTION)

        def reported(comment, reason, times):
            readers = [user for user in users if user.pk != comment.author_id][:times]
            for reader in readers:
                report_create(
                    comment=queries.comment_ref_for_viewer(comment_id=comment.id, user=reader),
                    reporter=reader,
                    reason=reason,
                )

        reported(threads["flat"][3], "abuse", site.report_threshold)
        reported(threads["two_level"][5], "spam", 1)

    def _print_urls(self, base):
        print_demo_urls(self.stdout, base)


def print_demo_urls(stdout, base: str) -> None:
    """The demo's addresses on the service at ``base``, its users and the host page."""
    subjects = Subject.objects.filter(site__key=queries.DEMO_SITE_KEY).order_by("pk")
    stdout.write("")
    stdout.write(f"Comment service: {base}/")
    stdout.write(f"  API docs:      {base}/api/v1/docs/")
    stdout.write(f"  Admin:         {base}/admin/   (moderator / {DEMO_PASSWORD})")
    stdout.write(f"  Console:       {base}/console/   (moderator / {DEMO_PASSWORD}: the review queue)")
    for s in subjects:
        stdout.write(f"  {s.mode:<10} {base}/api/v1/subjects/{s.pk}/comments   ({s.comment_count} comments)")
    stdout.write(f"Demo users: {', '.join(NAMES)} (password {DEMO_PASSWORD}); site 'demo', SSO secret {SSO_SECRET}")
    for s in subjects:
        stdout.write(f"  widget     {base}/embed/?site=demo&key={s.key}")
    stdout.write(
        f"Demo host page:  {queries.demo_host_url()}   (`manage.py rundemo` serves it beside the service; pick a user to sign in by SSO)"
    )
