"""Moderation figures for ``docs/benchmarks.md`` (its ``<!-- moderation:start -->`` block):

1. the word filter check: ``bench.wordfilter`` (10,000 words, a 5,000-character body), run as
   it is and its lines quoted;
2. how long a word list edit takes to reach another process: a second process polls its
   compiled lists (``moderation.words.filters_for``) and scans a probe text while this one
   adds the word through the service; the delay from commit to the first hit is measured;
3. the review queue's first page (and a deep page by cursor) with 100,000 open tasks, in
   process around Django's test client, as ``bench.core`` measures pages.

    DJANGO_SECRET_KEY=bench DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench \\
    REDIS_URL=redis://127.0.0.1:6379/14 .venv/bin/python -m bench.moderation

Runs on the ``bench`` database of ``bench.core`` (seed it first): the tasks are made for the
comments of its 100,000-comment subject and kept for later runs.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.core import BASE_DIR, calibrate, configure, percentile, write_marked_block

BLOCK_START, BLOCK_END = "<!-- moderation:start -->", "<!-- moderation:end -->"
TASKS = 100_000


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--edits", type=int, default=5, help="word list edits timed (5)")
    parser.add_argument("--output", default="docs/benchmarks.md")
    parser.add_argument("--allow-sqlite", action="store_true")
    return parser.parse_args(argv)


def run_wordfilter() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.wordfilter"],
        cwd=BASE_DIR,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return [line for line in out.stdout.splitlines() if line.strip()]


POLLER = r"""
import os, sys, time
sys.path.insert(0, {root!r})
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django; django.setup()
from moderation import words
site_id, probe = int(sys.argv[1]), sys.argv[2]
print("ready", flush=True)
deadline = time.time() + 30
while time.time() < deadline:
    global_words, site_words = words.filters_for(site_id)
    if site_words.scan(probe):
        print(f"seen {{time.time():.6f}}", flush=True)
        break
    time.sleep(0.01)
else:
    print("never", flush=True)
"""


def time_word_edits(site, actor, edits: int) -> list[float]:
    from django.db import transaction

    from moderation.models import WordEntry
    from moderation.services import word_create, word_delete

    delays = []
    for n in range(edits):
        word = f"benchword{n}x{random.randrange(10**6)}"
        # The other process starts with the list as it is and its automaton compiled.
        poller = subprocess.Popen(
            [sys.executable, "-c", POLLER.format(root=str(BASE_DIR)), str(site.pk), f"a {word} here"],
            cwd=BASE_DIR,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert poller.stdout.readline().strip() == "ready"
        time.sleep(1.5)  # past its first recheck interval, so its lists are the old ones
        committed = []
        with transaction.atomic():
            entry = word_create(actor=actor, site=site, word=word, action="review")
            transaction.on_commit(lambda: committed.append(time.time()))  # noqa: B023 - called before the loop moves on
        line = poller.stdout.readline().strip()
        poller.wait(timeout=60)
        if not line.startswith("seen"):
            raise SystemExit(f"bench: the other process never saw {word!r}")
        delays.append((float(line.split()[1]) - committed[0]) * 1000)
        word_delete(actor=actor, entry=WordEntry.objects.get(pk=entry.pk))
    return delays


def seed_tasks(site, subject) -> int:
    from comments.models import Comment
    from moderation.models import ReviewTask

    have = ReviewTask.objects.filter(site=site, state="open").count()
    if have >= TASKS:
        return have
    rng = random.Random(7)
    taken = set(ReviewTask.objects.filter(site=site, state="open").values_list("comment_id", flat=True))
    ids = [i for i in Comment.objects.filter(subject=subject).values_list("pk", flat=True) if i not in taken]
    reasons = [["report:spam"], ["word:crypto"], ["spam:links"], ["policy:pre"], ["report:abuse", "word:scam"]]
    batch = [
        ReviewTask(
            comment_id=i,
            subject_id=subject.pk,
            site=site,
            reasons=rng.choice(reasons),
            priority=rng.choice((0, 1, 5, 10, 20, 25, 40, 60)),
        )
        for i in ids[: TASKS - have]
    ]
    ReviewTask.objects.bulk_create(batch, batch_size=5000)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE moderation_task")
    return ReviewTask.objects.filter(site=site, state="open").count()


def time_queue(client, headers, site_key: str, iterations: int, warmup: int):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    url = "/api/v1/moderation/queue"
    first = client.get(url, {"site": site_key}, **headers).json()
    cursor = first["next_cursor"]
    for _ in range(499):
        cursor = client.get(url, {"site": site_key, "cursor": cursor}, **headers).json()["next_cursor"]
    results = {}
    for label, params in (
        ("first page", {"site": site_key}),
        ("page 500 (cursor)", {"site": site_key, "cursor": cursor}),
    ):
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url, params, **headers)
        query_count = len(queries.captured_queries)  # now: the next request clears the log
        assert response.status_code == 200 and len(response.json()["items"]) == 20, response.content[:300]
        for _ in range(warmup):
            client.get(url, params, **headers)
        samples = []
        for _ in range(iterations):
            started = time.perf_counter()
            client.get(url, params, **headers)
            samples.append((time.perf_counter() - started) * 1000)
        results[label] = (query_count, percentile(samples, 50), percentile(samples, 99), sum(samples) / len(samples))
    return results


def write_block(path: Path, block: str) -> None:
    write_marked_block(path, BLOCK_START, BLOCK_END, block)


def main(argv=None) -> int:
    args = parse_args(argv)
    configure(args)
    from django.core.management import call_command
    from django.test import Client

    from comments.models import Site, Subject, User
    from comments.services import token_issue

    call_command("migrate", verbosity=0)
    started = datetime.now(UTC)
    load_start = " ".join(f"{x:.2f}" for x in os.getloadavg())
    calibration_start = calibrate()

    print("bench: word filter (bench.wordfilter)", flush=True)
    filter_lines = run_wordfilter()
    for line in filter_lines:
        print("  " + line)

    site = Site.objects.filter(key="bench").first()
    subject = Subject.objects.filter(keys__site=site, keys__key="bench-100000").first() if site else None
    if subject is None:
        raise SystemExit("bench: seed the dataset first: python -m bench.core")
    staff, _ = User.objects.get_or_create(username="bench-moderator", defaults={"is_staff": True})
    if not staff.is_staff:
        User.objects.filter(pk=staff.pk).update(is_staff=True)
        staff.refresh_from_db()

    print("bench: word list edits seen by another process", flush=True)
    delays = time_word_edits(site, staff, args.edits)
    print("  delays ms: " + ", ".join(f"{d:.0f}" for d in delays))

    print("bench: review queue", flush=True)
    open_tasks = seed_tasks(site, subject)
    raw, _ = token_issue(user=staff)
    queue = time_queue(Client(), {"HTTP_AUTHORIZATION": f"Bearer {raw}"}, site.key, args.iterations, args.warmup)
    for label, (n, p50, p99, mean) in queue.items():
        print(f"  {label}: {n} queries, p50 {p50:.2f} ms, p99 {p99:.2f} ms, mean {mean:.2f} ms")

    from django.conf import settings

    filter_ok = any(line.startswith("PASS: scan without hits") for line in filter_lines)
    verdicts = [
        (
            "word filter check p99 < 1 ms (10,000 words, 5,000 characters)",
            "see the bench.wordfilter lines above",
            filter_ok,
        ),
        (
            "a word list edit visible to every process in < 5 s",
            f"at most {max(delays):.0f} ms over {len(delays)} edits (recheck interval {settings.MODERATION_WORDS_RECHECK:g} s)",
            max(delays) < 5000,
        ),
        (
            "the queue's first page < 20 ms with 100,000 open tasks",
            f"p99 {queue['first page'][2]:.2f} ms ({queue['first page'][0]} queries; {open_tasks:,} open tasks)",
            queue["first page"][2] < 20,
        ),
    ]
    for target, measured, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {target}: {measured}")

    lines = [
        BLOCK_START,
        "## Moderation",
        "",
        f"Generated by `bench/moderation.py` on {started.strftime('%Y-%m-%d %H:%M UTC')}; re-run the command to refresh this section.",
        "",
        "```sh",
        "DJANGO_SECRET_KEY=bench DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench REDIS_URL=redis://127.0.0.1:6379/14 .venv/bin/python -m bench.moderation",
        "```",
        "",
        f"- load average at the start {load_start}, at the end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
        f"Python speed check (bench/core.py's `calibrate()`): {calibration_start:.0f} ms before, {calibrate():.0f} ms after",
        "",
        "### Word filter check (`.venv/bin/python -m bench.wordfilter`)",
        "",
        "```",
        *filter_lines,
        "```",
        "",
        "### A word list edit reaching another process",
        "",
        "Another process holds the site's compiled list and scans a probe text every 10 ms; this one adds the word "
        "through `moderation.services.word_create` (which bumps the version in the shared Redis cache on commit). "
        f"Delay from the commit to the other process's first hit, {len(delays)} edits: "
        + ", ".join(f"{d:.0f}" for d in delays)
        + " ms. "
        f"The bound is the recheck interval (`MODERATION_WORDS_RECHECK`, {settings.MODERATION_WORDS_RECHECK:g} s) plus compiling the list.",
        "",
        "### The review queue with 100,000 open tasks",
        "",
        f"`GET /api/v1/moderation/queue?site=bench` as a staff moderator, {args.iterations} timed requests after {args.warmup}, "
        f"in process (no network), {open_tasks:,} open tasks on the site over its 100,000 comments.",
        "",
        "| page | queries | p50 ms | p99 ms | mean ms |",
        "|---|---:|---:|---:|---:|",
        *[f"| {label} | {n} | {p50:.2f} | {p99:.2f} | {mean:.2f} |" for label, (n, p50, p99, mean) in queue.items()],
        "",
        "### Targets",
        "",
        "| target | measured | result |",
        "|---|---|---|",
        *[f"| {t} | {m} | {'PASS' if ok else '**FAIL**'} |" for t, m, ok in verdicts],
        BLOCK_END,
    ]
    if args.output != "-":
        path = Path(args.output)
        path = path if path.is_absolute() else Path.cwd() / path
        write_block(path, "\n".join(lines))
        print(f"bench: wrote {path}")
    return 0 if all(ok for _, _, ok in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
