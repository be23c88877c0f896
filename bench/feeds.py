"""What the site-wide reads of ``feeds`` cost (``feeds/queries.py``): the recent and top
comments of a site and its feed, on a big site and on a small one sharing the database.

    DATABASE_URL=postgres://.../bench_feeds .venv/bin/python -m bench.feeds \
        [--comments 1000000] [--subjects 2000]

The dataset, written once by set-based SQL (a run finds it and reuses it): site ``feeds-small``,
one subject with 20 comments a day old; site ``feeds-big``, ``--subjects`` subjects and
``--comments`` published public comments of the last 12 hours, newer than the small site's,
spread evenly. ``comment_index`` has no site column: a site's comments are those of its subjects,
so the plan for a small site starts from its subjects, and for a big one walks the comments by id
(recent) or sorts the window's comments by likes (top). Prints the median of 7 runs of each read,
after one untimed run, and the top list's first page once it is kept in the cache (API:
``top_comments_json``).
"""

from __future__ import annotations

import argparse
import statistics
import time

from .core import configure


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.feeds", description=__doc__.split("\n\n")[0])
    parser.add_argument("--comments", type=int, default=1_000_000)
    parser.add_argument("--subjects", type=int, default=2000)
    parser.add_argument("--allow-sqlite", action="store_true")
    return parser.parse_args(argv)


SEED = """
INSERT INTO {site} (key, name, allowed_origins, sso_secret, default_mode, moderation, report_threshold, created_at)
VALUES ('feeds-small', 'Small', '[]', '', 'two_level', 'post', 3, now()), ('feeds-big', 'Big', '[]', '', 'two_level', 'post', 3, now());
INSERT INTO {subject} (site_id, key, title, url, mode, state, comment_count, root_count, floor_seq, created_at)
SELECT (SELECT id FROM {site} WHERE key = 'feeds-small'), 'small', 'Small', '', 'two_level', 'open', 0, 0, 0, now();
INSERT INTO {subject} (site_id, key, title, url, mode, state, comment_count, root_count, floor_seq, created_at)
SELECT (SELECT id FROM {site} WHERE key = 'feeds-big'), 'big:' || g, 'Big', '', 'two_level', 'open', 0, 0, 0, now()
FROM generate_series(1, %(subjects)s) g;
INSERT INTO {comment} (id, path, depth, floor, status, visibility, pinned, featured, like_count, reply_count,
                       descendant_count, reply_floor_seq, created_at, subject_id)
SELECT g, lpad(g::text, 12, '0'), 0, g, 'published', 'public', false, false, g %% 50, 0, 0, 0,
       now() - interval '1 day' + g * interval '1 ms', (SELECT id FROM {subject} WHERE key = 'small')
FROM generate_series(1, 20) g;
INSERT INTO {comment} (id, path, depth, floor, status, visibility, pinned, featured, like_count, reply_count,
                       descendant_count, reply_floor_seq, created_at, subject_id)
SELECT 100 + g, lpad((100 + g)::text, 12, '0'), 0, g, 'published', 'public', false, false, g %% 97, 0, 0, 0,
       now() - interval '12 hours' + g * (interval '12 hours' / %(comments)s), s.id
FROM generate_series(1, %(comments)s) g JOIN {subject} s ON s.key = 'big:' || (1 + g %% %(subjects)s);
INSERT INTO {content} (comment_id, subject_id, body, html, mentions, user_agent)
SELECT id, subject_id, 'x', '<p>x</p>', '[]', '' FROM {comment} WHERE id NOT IN (SELECT comment_id FROM {content});
ANALYZE;
"""


def seed(args) -> None:
    from django.db import connection

    from comments.models import Comment, CommentContent, Site, Subject

    if Site.objects.filter(key="feeds-big").exists():
        return
    if Comment.objects.exists():
        raise SystemExit("bench.feeds: the database holds other comments; give it an empty one")
    names = {
        m: connection.ops.quote_name(model._meta.db_table)
        for m, model in {"site": Site, "subject": Subject, "comment": Comment, "content": CommentContent}.items()
    }
    started = time.perf_counter()
    with connection.cursor() as cursor:
        for statement in SEED.format(**names).split(";\n"):
            if statement.strip():
                cursor.execute(statement, {"comments": args.comments, "subjects": args.subjects})
    print(f"seeded {args.comments:,} comments in {args.subjects:,} subjects in {time.perf_counter() - started:.0f} s")


def median_ms(read) -> float:
    read()
    runs = []
    for _ in range(7):
        started = time.perf_counter()
        read()
        runs.append((time.perf_counter() - started) * 1000)
    return statistics.median(runs)


def main(argv=None) -> None:
    args = parse_args(argv)
    configure(args)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    seed(args)
    from django.core.cache import cache

    from comments.models import Site
    from feeds import queries

    for key in ("feeds-small", "feeds-big"):
        site = Site.objects.get(key=key)
        cache.clear()
        reads = {
            "recent, first page": lambda: queries.recent_comments(site=site, limit=20, cursor=None),  # noqa: B023 - called before the loop moves on
            "top (30 days), first page": lambda: queries.top_comments(site=site, days=30, limit=20, cursor=None),  # noqa: B023 - called before the loop moves on
            "top, first page kept": lambda: queries.top_comments_json(site=site, days=30, limit=20, cursor=None),  # noqa: B023 - called before the loop moves on
            "site feed (50)": lambda: queries.site_feed(site_key=key),  # noqa: B023 - called before the loop moves on
        }
        print(key, "  ".join(f"{name}: {median_ms(read):.1f} ms" for name, read in reads.items()))


if __name__ == "__main__":
    main()
