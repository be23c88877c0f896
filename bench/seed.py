"""The benchmark dataset: one subject with N comments over realistic depths, users, follows
and likes, built in Python and bulk-inserted (``comment_create`` per row would take hours).

Every stored value is what the service itself would have written: ids from
``comments.ids.IdGenerator`` (time-ordered, a fixed worker number, the clock set to each
comment's creation time), paths from ``comments.paths``, floors numbered in time order
(top-level per subject, replies per thread), denormalized counters computed here and then
checked by ``comments.services.subject_reconcile_counters`` (which must find nothing to fix).

Shape (for 100,000 comments): ~10,400 top-level comments; thread sizes skewed (5 hot threads
with thousands of replies, ~150 with 50-500, the rest mostly 0-10); replies answer the
top-level comment about half of the time, otherwise an earlier reply (often the latest one, which
makes conversation chains), so depths are mostly 1-3 with a tail; one 100-floor chain (a
top-level comment and 99 replies, each answering the previous one); statuses mostly published,
with deleted (some keeping replies, so placeholders), rejected, pending, shadow and friends-only
rows; like counts Pareto-distributed, backed by real ``Like`` rows. Around it, other subjects of
the same site hold as many comments again (interleaved in time, hence in id order), so the
planner faces a table where the bench subject is one subject among many.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.contrib.auth.hashers import make_password
from django.db import connection, transaction

from comments import paths, services
from comments.ids import IdGenerator
from comments.models import (
    Comment,
    CommentContent,
    Follow,
    Site,
    Status,
    Subject,
    User,
    Visibility,
)
from comments.queries import subject_id_by_key
from comments.rendering import render_markdown

SEED_VERSION = 1
SITE_KEY = "bench"
# Worker number of the seeded ids. The seeded times lie in the past, so these ids cannot collide
# with ids that a live process (whatever its leased worker number) makes now.
BENCH_WORKER = 255
SPAN = timedelta(days=30)
MAX_RANDOM_DEPTH = 40  # depth cap of the random threads (the chain goes deeper)
CHAIN_LENGTH = 100


@dataclass(frozen=True)
class Shape:
    comments: int = 100_000
    users: int = 1_000
    likes: int = 1_000_000
    seed: int = 42
    # Other subjects' comments in the same tables, interleaved in time (and so in id order) with
    # the bench subject's: without them every row of comment_index belongs to the bench subject
    # and the planner would see no difference between a primary-key scan and a per-subject index.
    background_comments: int = 100_000
    background_subjects: int = 1_000

    @property
    def signature(self) -> str:
        return (
            f"bench v{SEED_VERSION}: comments={self.comments} users={self.users} "
            f"likes={self.likes} seed={self.seed} background={self.background_comments}"
            f"/{self.background_subjects}"
        )

    @property
    def subject_key(self) -> str:
        return f"bench-{self.comments}"


class Node:
    __slots__ = (
        "idx",
        "thread",
        "parent",
        "local",
        "depth",
        "t",
        "ms",
        "id",
        "path",
        "floor",
        "status",
        "visibility",
        "author",
        "like_count",
        "reply_count",
        "descendant_count",
        "reply_floor_seq",
        "pinned",
        "featured",
        "body",
    )
    # Set as the seed goes: its time, id, path and floor, the author and the body picked for it.
    ms: int
    id: int
    path: str
    floor: int
    author: int
    body: int

    def __init__(self, idx, thread, parent, local, depth, t):
        self.idx, self.thread, self.parent, self.local, self.depth, self.t = idx, thread, parent, local, depth, t
        self.status, self.visibility = Status.PUBLISHED, Visibility.PUBLIC
        self.like_count = self.reply_count = self.descendant_count = self.reply_floor_seq = 0
        self.pinned = self.featured = False

    @property
    def counted(self) -> bool:
        return self.status == Status.PUBLISHED and self.visibility == Visibility.PUBLIC


# --- the plan (pure Python, deterministic for a seed) ----------------------------------------


def _small_thread(rng: random.Random) -> int:
    if rng.random() < 0.92:
        return int(rng.expovariate(1 / 2.5))
    return int(rng.uniform(10, 41))


def _thread_sizes(rng: random.Random, shape: Shape) -> tuple[int, int, list[int], list[str]]:
    """(number of top-level comments, chain length, reply count of each other thread, their
    kind)."""
    n = shape.comments
    chain = CHAIN_LENGTH if n >= 10 * CHAIN_LENGTH else max(2, n // 10)
    roots = max(2, round(n * 0.104))
    budget = n - roots - (chain - 1)
    other = roots - 1
    n_hot = min(5, other // 50)
    n_medium = round(other * 0.015)
    n_small = other - n_hot - n_medium
    small = [_small_thread(rng) for _ in range(n_small)]
    medium = [int(math.exp(rng.uniform(math.log(50), math.log(500)))) for _ in range(n_medium)]
    rest = budget * (0.8 if n_hot else 1.0)
    total = sum(small) + sum(medium)
    if total > rest:
        factor = rest / total
        small = [int(s * factor) for s in small]
        medium = [int(m * factor) for m in medium]
    left = budget - sum(small) - sum(medium)
    if n_hot:
        shares = [0.40, 0.25, 0.16, 0.11, 0.08][:n_hot]
        hot = [int(left * s / sum(shares)) for s in shares]
        hot[0] += left - sum(hot)
    else:
        hot = []
        for _ in range(left):
            small[rng.randrange(len(small))] += 1
    sizes = hot + medium + small
    kinds = ["hot"] * len(hot) + ["medium"] * len(medium) + ["small"] * len(small)
    return roots, chain, sizes, kinds


def plan(
    shape: Shape, end: datetime, worker: int = BENCH_WORKER, bodies: list[tuple[str, str]] | None = None
) -> tuple[list[Node], int, list[tuple[str, str]]]:
    """Every comment, in creation order, with ids, paths, floors, statuses, likes and counters.
    Returns ``(nodes, index of the chain's last comment, (body, html) variants)``."""
    rng = random.Random(shape.seed)
    span = SPAN.total_seconds()
    roots, chain_len, sizes, kinds = _thread_sizes(rng, shape)
    root_times = sorted(rng.uniform(0, span * 0.97) for _ in range(roots))
    # Which top-level comment gets which thread: the chain in the middle, the rest shuffled.
    assignment = [("chain", chain_len - 1)] + list(zip(kinds, sizes, strict=True))
    rest = assignment[1:]
    rng.shuffle(rest)
    middle = roots // 2
    assignment = rest[:middle] + [assignment[0]] + rest[middle:]

    nodes: list[Node] = []
    chain_tail = -1
    chain_members: set[int] = set()
    for thread_no, (t0, (kind, size)) in enumerate(zip(root_times, assignment, strict=True)):
        root = Node(len(nodes), thread_no, None, -1, 0, t0)
        nodes.append(root)
        mean_delay = 3 * 3600 if kind == "small" else 24 * 3600
        times = []
        for _ in range(size):
            t = t0 + rng.expovariate(1 / mean_delay)
            if t >= span:
                t = t0 + (span - t0) * rng.random()
            times.append(t)
        times.sort()
        thread_nodes: list[Node] = []
        for j, t in enumerate(times):
            if kind == "chain":
                parent = thread_nodes[j - 1] if j else root
            else:
                r = rng.random()
                if j == 0 or r < 0.5:
                    parent = root
                elif r < 0.65:
                    parent = thread_nodes[j - 1]
                else:
                    parent = thread_nodes[rng.randrange(j)]
                if parent.depth >= MAX_RANDOM_DEPTH:
                    parent = root
            node = Node(len(nodes), thread_no, parent.idx, j, parent.depth + 1, t)
            nodes.append(node)
            thread_nodes.append(node)
        if kind == "chain":
            chain_tail = thread_nodes[-1].idx if thread_nodes else root.idx
            chain_members = {root.idx} | {n.idx for n in thread_nodes}

    # Creation order = time order (ties: thread, then position in the thread, so a parent always
    # precedes its replies); ids from the generator with its clock set to each comment's time.
    order = sorted(range(len(nodes)), key=lambda i: (nodes[i].t, nodes[i].thread, nodes[i].local))
    start_ms = int((end - SPAN).timestamp() * 1000)
    clock_now = [0.0]
    generator = IdGenerator(worker, clock=lambda: clock_now[0])
    previous = -1
    for i in order:
        node = nodes[i]
        ms = max(start_ms + int(node.t * 1000), previous + 1)
        previous = ms
        node.ms = ms
        clock_now[0] = (ms + 0.5) / 1000  # mid-millisecond: no float rounding down
        node.id = generator.next_id()
    nodes = [nodes[i] for i in order]
    position = {n.idx: k for k, n in enumerate(nodes)}
    for k, node in enumerate(nodes):
        node.parent = None if node.parent is None else position[node.parent]
        node.thread = k if node.parent is None else nodes[node.parent].thread
        node.idx = k
    chain_members = {position[i] for i in chain_members}
    chain_tail = position[chain_tail]

    # Paths, floors.
    top_floor = 0
    for node in nodes:
        if node.parent is None:
            top_floor += 1
            node.floor = top_floor
            node.path = paths.encode_step(node.id)
        else:
            parent = nodes[node.parent]
            node.path = paths.child_path(parent.path, node.id)
            assert node.depth == parent.depth + 1 and node.id > parent.id
            root = nodes[node.thread]
            root.reply_floor_seq += 1
            node.floor = root.reply_floor_seq

    # Statuses and visibility (the chain stays fully published).
    for node in nodes:
        if node.idx in chain_members:
            continue
        r = rng.random()
        if r < 0.015:
            node.status = Status.DELETED
        elif r < 0.018:
            node.status = Status.REJECTED
        elif r < 0.023:
            node.status = Status.PENDING
        elif r < 0.025:
            node.status = Status.SHADOW
        elif r < 0.030:
            node.visibility = Visibility.FRIENDS

    # Authors: skewed, user 0 the most prolific.
    for node in nodes:
        node.author = min(shape.users - 1, int(shape.users * rng.random() ** 2))

    # Likes: Pareto weights scaled so the published comments carry ``shape.likes`` likes in all
    # (each at most one per user).
    likeable = [n for n in nodes if n.counted]
    weights = [rng.paretovariate(1.1) - 1 for _ in likeable]
    if shape.likes and likeable:
        lo, hi = 0.0, 1.0
        while sum(min(shape.users, int(w * hi)) for w in weights) < shape.likes and hi < 1e9:
            hi *= 2
        for _ in range(40):
            mid = (lo + hi) / 2
            if sum(min(shape.users, int(w * mid)) for w in weights) < shape.likes:
                lo = mid
            else:
                hi = mid
        for node, w in zip(likeable, weights, strict=True):
            node.like_count = min(shape.users, int(w * hi))

    # Flags: two pinned top-level comments, the 20 most liked replies featured.
    small_roots = [n for n in nodes if n.parent is None and n.counted and n.idx not in chain_members]
    for node in rng.sample(small_roots, min(2, len(small_roots))):
        node.pinned = True
    for node in sorted((n for n in likeable if n.parent is not None), key=lambda n: -n.like_count)[:20]:
        node.featured = True

    # Counters, as the service keeps them (see subject_reconcile_counters).
    for node in nodes:
        if node.parent is None or not node.counted:
            continue
        nodes[node.thread].reply_count += 1  # top-level: visible replies of the whole thread
        if node.parent != node.thread:
            nodes[node.parent].reply_count += 1  # reply: its visible direct replies
        ancestor = node.parent
        while ancestor is not None:
            nodes[ancestor].descendant_count += 1
            ancestor = nodes[ancestor].parent

    bodies = bodies or _bodies(rng)
    for node in nodes:
        node.body = rng.randrange(len(bodies))
    return nodes, chain_tail, bodies


_SENTENCES = [
    "Great write-up, thanks for sharing.",
    "I'm not convinced by the second section — the numbers seem **off** to me.",
    "Has anyone tried this with a bigger dataset? Curious how it scales.",
    "This matches what we saw in production last year, almost to the millisecond.",
    "Small nit: the link in paragraph three is broken, see https://example.com/docs instead.",
    "Bookmarking this. The part about caching is *exactly* what I needed.",
    "Counterpoint: simpler designs usually win in the long run.",
    "Could you share the benchmark script?",
    "我觉得这个方案很有意思，尤其是缓存的部分。",
    "Finally someone explains materialized paths clearly!",
    "Agreed, and I'd add that monitoring matters as much as the design.",
    "Not sure — which version were you on?",
    "Source? I'd like to read more.",
    "+1, same experience here.",
    "That's fair, but it depends on the workload: `SELECT count(*)` on a big table hurts.",
    "Ha, I made the same mistake once and it cost us a weekend.",
    "同意楼上的观点。",
    '> quoting the article: "write aggregation is the trick"\n\nYes, it is.',
]


def _bodies(rng: random.Random) -> list[tuple[str, str]]:
    """Sixty (body, html) variants of 1 to 6 sentences, rendered by the product's renderer."""
    out = []
    for _ in range(60):
        body = " ".join(rng.choice(_SENTENCES) for _ in range(rng.randint(1, 6)))
        out.append((body, render_markdown(body)))
    return out


# --- writing -----------------------------------------------------------------------------------


def ensure_users(shape: Shape) -> list[int]:
    """The bench users (``bench0000``...), created once with unusable passwords, and a follow
    graph among them (with some mutual follows, so friends-only visibility has work to do)."""
    names = [f"bench{i:04d}" for i in range(shape.users)]
    existing = set(User.objects.filter(username__in=names).values_list("username", flat=True))
    missing = [
        User(username=name, display_name=f"Bench User {i}", password=make_password(None))
        for i, name in enumerate(names)
        if name not in existing
    ]
    User.objects.bulk_create(missing, batch_size=1000)
    by_name = dict(User.objects.filter(username__in=names).values_list("username", "id"))
    ids = [by_name[name] for name in names]
    if not Follow.objects.filter(follower_id__in=ids).exists():
        rng = random.Random(shape.seed + 1)
        pairs = set()
        for a in range(len(ids)):
            for _ in range(min(200, int(rng.expovariate(1 / 10)))):
                b = rng.randrange(len(ids))
                if b != a:
                    pairs.add((a, b))
        # The authenticated viewer of the benchmark follows 50 users; half follow back.
        viewer = VIEWER_INDEX if len(ids) > VIEWER_INDEX else 0
        for b in rng.sample(range(len(ids)), min(51, len(ids))):
            if b != viewer:
                pairs.add((viewer, b))
                if rng.random() < 0.5:
                    pairs.add((b, viewer))
        Follow.objects.bulk_create(
            [Follow(follower_id=ids[a], followee_id=ids[b]) for a, b in sorted(pairs)], batch_size=5000
        )
    return ids


# The authenticated reader of the benchmark: an active user (a few hundred comments of their own
# in the subject, some pending or shadow-banned, which the visibility filter must show them).
VIEWER_INDEX = 10


def purge_comments(where_sql: str, params: list) -> int:
    """Delete comments matching ``where_sql`` (over ``comment_index``) and every row that
    references them, set-based. Django's ORM delete would load every row to cascade in Python."""
    qn = connection.ops.quote_name
    ids_sql = f"SELECT id FROM comment_index WHERE {where_sql}"
    with transaction.atomic(), connection.cursor() as cursor:
        for rel in Comment._meta.related_objects:
            model = rel.related_model
            if model is Comment or not hasattr(rel, "field"):
                continue
            cursor.execute(
                f"DELETE FROM {qn(model._meta.db_table)} WHERE {qn(rel.field.column)} IN ({ids_sql})", params
            )
        cursor.execute(f"DELETE FROM comment_index WHERE {where_sql}", params)
        return cursor.rowcount


def bench_site() -> Site:
    site, _ = Site.objects.get_or_create(key=SITE_KEY, defaults={"name": "Benchmark"})
    return site


BACKGROUND_PREFIX = "bg-"
BACKGROUND_WORKER = 254


def find_subject(shape: Shape) -> Subject | None:
    # As the service finds a subject by key: two single-shard statements on Citus, where a join
    # of the subjects with their keys (two co-location groups) is refused.
    site = Site.objects.filter(key=SITE_KEY).first()
    subject_id = subject_id_by_key(site=site, key=shape.subject_key) if site else None
    return Subject.objects.filter(pk=subject_id).first() if subject_id else None


def background_count() -> int:
    return Comment.objects.filter(subject__site__key=SITE_KEY, subject__key__startswith=BACKGROUND_PREFIX).count()


def seed(shape: Shape, log=print) -> Subject:
    """(Re)build the benchmark subject, and the background subjects, from scratch."""
    site = bench_site()
    old = find_subject(shape)
    if old is not None:
        log(f"  removing the old bench subject {old.pk} ...")
        purge_comments("subject_id = %s", [old.pk])
        old.delete()
    background = Subject.objects.filter(site=site, key__startswith=BACKGROUND_PREFIX)
    if background.exists():
        log("  removing the old background subjects ...")
        purge_comments(
            "subject_id IN (SELECT id FROM comment_subject WHERE site_id = %s AND key LIKE %s)",
            [site.pk, BACKGROUND_PREFIX + "%"],
        )
        background.delete()
    user_ids = ensure_users(shape)
    started = time.perf_counter()
    end = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=1)
    nodes, _chain_tail, bodies = plan(shape, end)
    log(f"  planned {len(nodes):,} comments in {time.perf_counter() - started:.1f} s")

    started = time.perf_counter()
    with transaction.atomic():
        subject = Subject(
            site=site,
            key=shape.subject_key,
            title=shape.signature,
            url="https://bench.example/100k",
            mode="two_level",
            comment_count=sum(1 for n in nodes if n.counted),
            root_count=sum(1 for n in nodes if n.counted and n.parent is None),
            floor_seq=sum(1 for n in nodes if n.parent is None),
        )
        services.subjects_create(site, [subject])
        _insert_comments(nodes, lambda n: subject.pk, user_ids, bodies)
        log(f"  inserted comments and contents in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        likes = _insert_likes(nodes, lambda n: subject.pk, user_ids, shape)
        log(f"  inserted {likes:,} likes in {time.perf_counter() - started:.1f} s")
        if shape.background_comments and shape.background_subjects:
            started = time.perf_counter()
            count = _seed_background(shape, site, end, user_ids, bodies)
            log(f"  inserted {count:,} background comments in {time.perf_counter() - started:.1f} s")
    _analyze()
    return subject


def _seed_background(shape: Shape, site: Site, end: datetime, user_ids: list[int], bodies) -> int:
    """Other subjects of the same site: one more planned forest (same time span, so ids
    interleave with the bench subject's) whose threads are dealt out to
    ``background_subjects`` subjects, with floors and counters made right per subject. Likes
    come to a tenth of the bench subject's rate."""
    bg_shape = Shape(
        comments=shape.background_comments,
        users=shape.users,
        likes=shape.background_comments,
        seed=shape.seed + 100,
        background_comments=0,
    )
    nodes, _, _ = plan(bg_shape, end, worker=BACKGROUND_WORKER, bodies=bodies)
    rng = random.Random(shape.seed + 101)
    n = shape.background_subjects
    # Skewed: a few busy subjects, many quiet ones.
    subject_of_thread = {node.idx: min(n - 1, int(n * rng.random() ** 1.5)) for node in nodes if node.parent is None}
    floors = [0] * n
    comment_count = [0] * n
    root_count = [0] * n
    for node in nodes:
        k = subject_of_thread[node.thread]
        if node.parent is None:
            floors[k] += 1
            node.floor = floors[k]
            node.pinned = False
            root_count[k] += node.counted
        comment_count[k] += node.counted
    subjects = [
        Subject(
            site=site,
            key=f"{BACKGROUND_PREFIX}{k:05d}",
            title="background",
            mode="two_level",
            comment_count=comment_count[k],
            root_count=root_count[k],
            floor_seq=floors[k],
        )
        for k in range(n)
    ]
    by_key = services.subjects_create(site, subjects)
    ids = [by_key[s.key] for s in subjects]

    def subject_id(node):
        return ids[subject_of_thread[node.thread]]

    _insert_comments(nodes, subject_id, user_ids, bodies)
    _insert_likes(nodes, subject_id, user_ids, bg_shape)
    return len(nodes)


def _insert_comments(nodes: list[Node], subject_id, user_ids: list[int], bodies, batch: int = 5000) -> None:
    for start in range(0, len(nodes), batch):
        chunk = nodes[start : start + batch]
        Comment.objects.bulk_create(
            [
                Comment(
                    id=n.id,
                    subject_id=subject_id(n),
                    author_id=user_ids[n.author],
                    reply_to_id=None if n.parent is None else nodes[n.parent].id,
                    root_id=None if n.parent is None else nodes[n.thread].id,
                    path=n.path,
                    depth=n.depth,
                    floor=n.floor,
                    status=n.status,
                    visibility=n.visibility,
                    pinned=n.pinned,
                    featured=n.featured,
                    like_count=n.like_count,
                    reply_count=n.reply_count,
                    descendant_count=n.descendant_count,
                    reply_floor_seq=n.reply_floor_seq,
                    created_at=datetime.fromtimestamp(n.ms / 1000, tz=UTC),
                )
                for n in chunk
            ]
        )
        CommentContent.objects.bulk_create(
            [
                CommentContent(
                    comment_id=n.id,
                    subject_id=subject_id(n),
                    body=bodies[n.body][0],
                    html=bodies[n.body][1],
                    mentions=[],
                    author_ip=f"203.0.113.{n.author % 250 + 1}",
                    user_agent="Mozilla/5.0 (bench)",
                )
                for n in chunk
            ]
        )


def _insert_likes(nodes: list[Node], subject_id, user_ids: list[int], shape: Shape) -> int:
    from likes.models import Like

    rng = random.Random(shape.seed + 2)
    end_ms = max(n.ms for n in nodes)

    def rows():
        for n in nodes:
            if n.like_count:
                for u in rng.sample(range(len(user_ids)), n.like_count):
                    ms = n.ms + int(rng.random() * max(1, end_ms - n.ms))
                    yield n.id, user_ids[u], subject_id(n), datetime.fromtimestamp(ms / 1000, tz=UTC), True, 0

    table = Like._meta.db_table
    count = 0
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            with cursor.cursor.copy(
                f"COPY {table} (comment_id, user_id, subject_id, created_at, active, version) FROM STDIN"
            ) as copy:
                for row in rows():
                    copy.write_row(row)
                    count += 1
        return count
    buffer = []
    for c, u, s, t, active, version in rows():
        buffer.append(Like(comment_id=c, user_id=u, subject_id=s, created_at=t, active=active, version=version))
        if len(buffer) >= 5000:
            Like.objects.bulk_create(buffer)
            count += len(buffer)
            buffer = []
    Like.objects.bulk_create(buffer)
    return count + len(buffer)


def _analyze() -> None:
    """Fresh planner statistics and visibility map, as a long-running database would have."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for table in (
                "comment_index",
                "comment_content",
                "likes_like",
                "comments_follow",
                "comment_subject",
                "comments_user",
                "comments_apitoken",
            ):
                cursor.execute(f"VACUUM (ANALYZE) {table}")
        else:
            cursor.execute("ANALYZE")
