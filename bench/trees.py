"""Why materialized paths and not django-mptt, measured on PostgreSQL (``docs/DESIGN.md``, "Why
materialized paths, not django-mptt"): the same comment threads stored both ways, then

1. concurrent replies into one thread: ``--writers`` processes, each with its own connection,
   reply ``--replies`` times each (or until ``--seconds`` have passed) at random points of one
   existing thread of each ``--write-threads`` size, the same points for every store; once more
   with one writer. Ours through the real write path, ``comments.services.comment_create``
   (checks, Markdown, floor, counters, content row, hooks), and, to show what the path alone
   costs, a bare path row (``bench.treeapp.models.PathNode``) made with ``create()``. mptt with
   ``Node.objects.create(parent=...)``, as its tutorial does: inside ``LOCK TABLE`` as its
   documentation asks ("Concurrency": the caller must make mptt's writes mutually exclusive),
   and without a lock (``--unlocked-replies`` each), as code that skips that page does.
   Afterwards each tree is checked: ours for paths, floors and counters
   (``subject_reconcile_counters``), mptt for repeated ``lft``/``rght`` values, the nodes its
   own ``partial_rebuild()`` moves, and ``get_descendants()``/``get_ancestors()`` of 200 nodes
   against the parent pointers;
2. a subtree: every descendant of a node of a ``--thread``-comment thread, among ``--others``
   comments of other threads (ours: the path range scan of ``comments.queries.modes
   .comment_tree``; mptt: ``get_descendants()``);
3. a chain: every ancestor of the deepest reply, ``--chain`` levels down (ours: the ids read
   from the path, then the rows by primary key, as ``comment_chain`` and stacked pages do; mptt:
   ``get_ancestors()``).

Reads are timed in this process, the two stores alternating, ``--reads`` times each after a
warm-up, through the ORM on both sides (ids only, and rows of the same four columns); both must
return the same comments in the same (depth-first) order or the run stops.

    .venv/bin/python -m bench.trees

The database (``--database-url``, default ``bench_trees`` on the local server) is dropped and
created anew, migrated, and dropped at the end (``--keep`` keeps it). Redis database 12 serves
the cache and the hand-offs a post makes, as in production (``--redis-url ''`` for none).
django-mptt comes with the ``bench`` extra: ``pip install -e '.[bench]'``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/bench_trees"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/12"
ID_WORKER = 253  # worker number of the seeded ids (in the past: no live id can collide)
MAX_RANDOM_DEPTH = 40  # as bench/seed.py: random replies go no deeper; the chain does
SAMPLE = 200  # nodes whose mptt answers are checked against the parent pointers
# The columns a read returns as "rows", the same on both sides, so both pay the same per row in
# Python: the comparison is of the trees, not of two models' widths.
OURS_ROW = ("id", "reply_to_id", "depth", "subject_id")
MPTT_ROW = ("id", "parent_id", "level", "subject_id")
BARRIER_SECONDS = 300
OTHER_THREAD = 100  # mean size of the other threads around the one read

# Write variants: (key, label). mptt's lock is the one its documentation asks for.
VARIANTS = {
    "paths": "ours: `comment_create` (the whole post)",
    "path-only": "a bare materialized path: `create()` with the path",
    "mptt-lock": "django-mptt, `LOCK TABLE` around each insert (its docs)",
    "mptt-bare": "django-mptt, no lock (autocommit)",
    "mptt-atomic": "django-mptt, no lock, one transaction per insert",
}
SINGLE_TOO = ("paths", "path-only", "mptt-lock")  # also run with one writer, for the scaling


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.trees", description=__doc__.split("\n\n")[0])
    parser.add_argument("--thread", type=int, default=10_000, help="comments in the thread read (10000)")
    parser.add_argument("--chain", type=int, default=100, help="depth of the deepest reply, the chain read (100)")
    parser.add_argument(
        "--others", type=int, default=40_000, help="comments of other threads around the one read (40000)"
    )
    parser.add_argument("--reads", type=int, default=200, help="timed reads per operation and store (200)")
    parser.add_argument("--writers", type=int, default=8, help="concurrent writer processes (8)")
    parser.add_argument("--replies", type=int, default=200, help="replies per writer (200)")
    parser.add_argument(
        "--unlocked-replies",
        type=int,
        default=25,
        help="replies per writer of mptt without a lock (25): enough to show what happens; each deadlock costs 1 s",
    )
    parser.add_argument("--seconds", type=float, default=60, help="a write run stops after this long, done or not (60)")
    parser.add_argument(
        "--write-threads",
        default="1000,10000",
        help="sizes of the threads written into, comma separated; each variant gets a fresh one (1000,10000)",
    )
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"write variants, comma separated ({','.join(VARIANTS)})"
    )
    parser.add_argument("--seed", type=int, default=42, help="random seed of the threads and reply points (42)")
    parser.add_argument("--database-url", default=DEFAULT_DATABASE_URL, help="PostgreSQL database, made anew")
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL, help="cache and hand-offs ('' for none)")
    parser.add_argument("--keep", action="store_true", help="keep the database at the end")
    args = parser.parse_args(argv)
    args.write_sizes = [int(s) for s in args.write_threads.split(",") if s.strip()]
    args.variant_keys = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = set(args.variant_keys) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")
    if args.chain >= args.thread // 2 or args.chain < 1:
        parser.error("--chain must be at least 1 and under half of --thread")
    return args


# --- environment ---------------------------------------------------------------------------


def environment(args: argparse.Namespace) -> None:
    """The variables the settings read, inherited by the writer processes too."""
    if urlsplit(args.database_url).scheme not in {"postgres", "postgresql"}:
        sys.exit("bench.trees: the benchmark runs on PostgreSQL (--database-url postgres://...)")
    name = urlsplit(args.database_url).path.lstrip("/")
    if not name or name in {"test", "postgres", "template0", "template1"}:
        sys.exit(f"bench.trees: {name!r} is not a database this benchmark may drop; name its own")
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.trees_settings"
    os.environ["DATABASE_URL"] = args.database_url
    if args.redis_url:
        os.environ["REDIS_URL"] = args.redis_url
    else:
        os.environ.pop("REDIS_URL", None)
    os.environ.pop("LIKES_REDIS_URL", None)  # the like state and hand-offs go to REDIS_URL's Redis
    os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key")
    # The tasks a post queues go to the in-memory transport (nothing runs them), as bench.core.
    os.environ.setdefault("CELERY_BROKER_URL", "memory://")
    os.environ.setdefault("RATE_LIMITS", "off")


def recreate_database(database_url: str, *, drop_only: bool = False) -> None:
    """Drop the benchmark's database and, unless ``drop_only``, create it empty (connected to
    the server's ``postgres`` database as the URL's user)."""
    import psycopg
    from psycopg import sql

    name = urlsplit(database_url).path.lstrip("/")
    with psycopg.connect(database_url, dbname="postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        if not drop_only:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


# --- the threads -----------------------------------------------------------------------------


@dataclass
class Thread:
    """A thread's shape: the parent of each comment (its index; -1 for the top-level comment)
    in creation order, and each comment's depth."""

    parent: list[int]
    depth: list[int]
    chain_tail: int  # the deepest reply of the chain (the top-level comment without one)

    def __len__(self) -> int:
        return len(self.parent)

    def children(self) -> list[list[int]]:
        kids: list[list[int]] = [[] for _ in self.parent]
        for i, p in enumerate(self.parent):
            if p >= 0:
                kids[p].append(i)
        return kids

    def descendants(self, i: int, kids: list[list[int]]) -> list[int]:
        """Depth-first, children in creation order (the order both stores read in)."""
        out: list[int] = []
        stack = list(reversed(kids[i]))
        while stack:
            j = stack.pop()
            out.append(j)
            stack.extend(reversed(kids[j]))
        return out

    def ancestors(self, i: int) -> list[int]:
        """Top-level first."""
        out = []
        while self.parent[i] >= 0:
            i = self.parent[i]
            out.append(i)
        return out[::-1]


def plan_thread(size: int, chain: int, rng: random.Random) -> Thread:
    """A top-level comment and ``size - 1`` replies, as bench/seed.py shapes threads: half answer
    the top-level comment, some the latest reply, the rest an earlier one; halfway through, a
    chain of ``chain`` replies, each answering the previous one."""
    parent, depth, free = [-1], [0], [0]
    chain_at, tail = (size // 2 if chain else -1), 0
    while len(parent) < size:
        if len(parent) == chain_at:
            p = 0
            for _ in range(min(chain, size - len(parent))):
                parent.append(p)
                depth.append(depth[p] + 1)
                p = len(parent) - 1
            tail = p
            continue
        r = rng.random()
        p = 0 if r < 0.5 else free[-1] if r < 0.65 else free[rng.randrange(len(free))]
        if depth[p] >= MAX_RANDOM_DEPTH:
            p = 0
        parent.append(p)
        depth.append(depth[p] + 1)
        free.append(len(parent) - 1)
    return Thread(parent, depth, tail)


class Stores:
    """The site, users and bodies both stores' threads are made of, and the seeded ids' clock."""

    def __init__(self, seed: int):
        from django.contrib.auth.hashers import make_password

        from bench import seed as seeding
        from comments.ids import IdGenerator
        from comments.models import Site, User

        self.rng = random.Random(seed)
        self.site = Site.objects.create(key="trees", name="bench.trees")
        names = [f"trees{i:03d}" for i in range(64)]
        User.objects.bulk_create([User(username=n, display_name=n, password=make_password(None)) for n in names])
        self.user_ids = list(User.objects.filter(username__in=names).order_by("username").values_list("id", flat=True))
        self.bodies = seeding._bodies(self.rng)
        # Every seeded comment gets the next millisecond from 30 days ago: ids unique across the
        # run's threads, older than any a post makes now.
        self.clock_ms = int((datetime.now(UTC) - timedelta(days=30)).timestamp() * 1000)
        self.ids = IdGenerator(ID_WORKER, clock=lambda: (self.clock_ms + 0.5) / 1000)
        self.subjects = 0

    def ours(self, threads: list[Thread]):
        """The threads as the service stores them, in one subject of their own: rows as
        bench/seed.py writes them (ids, paths, floors, counters). Returns ``(subject, each
        thread's ids by index)``."""
        from bench import seed as seeding
        from comments import paths, services
        from comments.models import Mode, Subject

        total = sum(len(t) for t in threads)
        self.subjects += 1
        subject = Subject(
            site=self.site,
            key=f"threads-{self.subjects}",
            title=f"{len(threads)} threads, {total} comments",
            mode=Mode.TWO_LEVEL,
            comment_count=total,
            root_count=len(threads),
            floor_seq=len(threads),
        )
        services.subjects_create(self.site, [subject])
        nodes: list[seeding.Node] = []
        out = []
        for floor, thread in enumerate(threads, 1):
            top = len(nodes)
            for i, (p, depth) in enumerate(zip(thread.parent, thread.depth, strict=True)):
                node = seeding.Node(top + i, top, None if p < 0 else top + p, i - 1, depth, 0.0)
                self.clock_ms += 1
                node.ms, node.id = self.clock_ms, self.ids.next_id()
                node.path = paths.encode_step(node.id) if p < 0 else paths.child_path(nodes[top + p].path, node.id)
                node.floor = floor if p < 0 else i
                node.author = self.rng.randrange(len(self.user_ids))
                node.body = self.rng.randrange(len(self.bodies))
                nodes.append(node)
            for i in range(len(thread) - 1, 0, -1):  # a parent comes before its replies
                p = thread.parent[i]
                nodes[top + p].descendant_count += nodes[top + i].descendant_count + 1
                if p:
                    nodes[top + p].reply_count += 1
            nodes[top].reply_count = nodes[top].reply_floor_seq = len(thread) - 1
            out.append([node.id for node in nodes[top:]])
        seeding._insert_comments(nodes, lambda node: subject.pk, self.user_ids, self.bodies)
        return subject, out

    def path_only(self, thread: Thread, subject_id: int) -> list[int]:
        """The thread as bare path rows (``PathNode``). Returns their ids by index."""
        from bench.treeapp.models import PathNode
        from comments import paths

        rows: list[PathNode] = []
        for p in thread.parent:
            self.clock_ms += 1
            id_ = self.ids.next_id()
            path = paths.encode_step(id_) if p < 0 else paths.child_path(rows[p].path, id_)
            body = self.bodies[self.rng.randrange(len(self.bodies))][0]
            rows.append(
                PathNode(id=id_, parent_id=None if p < 0 else rows[p].id, subject_id=subject_id, path=path, body=body)
            )
        PathNode.objects.bulk_create(rows, batch_size=5000)
        return [row.id for row in rows]

    def mptt(self, threads: list[Thread], subject_id: int) -> list[tuple[int, list[int]]]:
        """The threads as mptt trees, one each: ``lft``/``rght`` numbered depth-first, children
        in creation order (where ``create(parent=...)`` puts each: last child). Returns each
        thread's ``(tree_id, node ids by index)``."""
        from django.db import connection
        from django.db.models import Max

        from bench.treeapp.models import Node

        top = Node.objects.aggregate(id=Max("id"), tree=Max("tree_id"))
        next_id, tree_id = (top["id"] or 0) + 1, top["tree"] or 0
        rows, out = [], []
        for thread in threads:
            tree_id += 1
            n, kids = len(thread), thread.children()
            left, right = [0] * n, [0] * n
            counter, stack = 2, [(0, iter(kids[0]))]
            left[0] = 1
            while stack:
                node, rest = stack[-1]
                child = next(rest, None)
                if child is None:
                    right[node] = counter
                    stack.pop()
                else:
                    left[child] = counter
                    stack.append((child, iter(kids[child])))
                counter += 1
            rows += [
                Node(
                    id=next_id + i,
                    parent_id=None if p < 0 else next_id + p,
                    subject_id=subject_id,
                    body=self.bodies[self.rng.randrange(len(self.bodies))][0],
                    lft=left[i],
                    rght=right[i],
                    level=thread.depth[i],
                    tree_id=tree_id,
                )
                for i, p in enumerate(thread.parent)
            ]
            out.append((tree_id, [next_id + i for i in range(n)]))
            next_id += n
        Node.objects.bulk_create(rows, batch_size=5000)
        table = Node._meta.db_table
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        return out


def analyze() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in ("comment_index", "comment_content", "treeapp_node", "treeapp_pathnode"):
            cursor.execute(f"VACUUM (ANALYZE) {table}")


# --- checks ----------------------------------------------------------------------------------


def check_ours(subject_id: int) -> tuple[int, list[str]]:
    """Rows of the subject, and what is wrong with them: paths that are not their parent's
    plus their own id, floors that repeat or skip, counters ``subject_reconcile_counters``
    had to fix (it fixes them)."""
    from django.conf import settings

    from comments import paths, services
    from comments.models import Comment

    rows = {
        r[0]: r for r in Comment.objects.filter(subject_id=subject_id).values_list("id", "reply_to_id", "path", "depth")
    }
    wrong_paths = 0
    for id_, reply_to, path, _depth in rows.values():
        if reply_to is None:
            wrong_paths += path != paths.encode_step(id_)
            continue
        parent = rows[reply_to]
        stem = parent[2] if parent[3] < settings.COMMENTS_MAX_DEPTH else paths.parent_path(parent[2])
        wrong_paths += path != paths.child_path(stem, id_)
    floors = sorted(Comment.objects.filter(subject_id=subject_id, depth__gt=0).values_list("floor", flat=True))
    top = Comment.objects.get(subject_id=subject_id, depth=0)
    report = services.subject_reconcile_counters(subject_id=subject_id)
    faults = []
    if wrong_paths:
        faults.append(f"{wrong_paths} wrong paths")
    if floors != list(range(1, len(floors) + 1)) or top.reply_floor_seq != len(floors):
        faults.append(f"floors not 1..{len(floors)} ({len(floors) - len(set(floors))} repeated)")
    if report.fixed_comments or report.fixed_subject:
        faults.append(f"{report.fixed_comments} comments' counters drifted")
    return len(rows), faults


def check_path_only(subject_id: int) -> tuple[int, list[str]]:
    """Rows of the bare path tree, and how many paths are not their parent's plus their id."""
    from bench.treeapp.models import PathNode
    from comments import paths

    rows = {r[0]: r for r in PathNode.objects.filter(subject_id=subject_id).values_list("id", "parent_id", "path")}
    wrong = sum(
        path != (paths.encode_step(id_) if parent is None else paths.child_path(rows[parent][2], id_))
        for id_, parent, path in rows.values()
    )
    return len(rows), [f"{wrong} wrong paths"] if wrong else []


def check_mptt(subject_id: int, tree_id: int, rng: random.Random) -> tuple[int, list[str]]:
    """Nodes of the tree, and what is wrong with it: ``lft``/``rght`` values used twice, the
    nodes mptt's own ``partial_rebuild()`` (from the parent pointers) moves, and what readers
    are shown: for every node, the subtree its bounds give (``get_descendants()``: the nodes of
    its tree whose ``lft`` lies within them) against the one its parent pointers give, and for
    ``SAMPLE`` nodes, ``get_ancestors()`` against the parent pointers. ``get_descendants()``
    itself is asked for the sample too, to hold this reading of it to mptt's own."""
    from bisect import bisect_left, bisect_right

    from django.db import transaction

    from bench.treeapp.models import Node

    fields = ("id", "parent_id", "lft", "rght", "level", "tree_id")
    before = {r[0]: r for r in Node.objects.filter(subject_id=subject_id).values_list(*fields)}
    edges = Counter((r[5], v) for r in before.values() for v in (r[2], r[3]))
    repeated = sum(c - 1 for c in edges.values() if c > 1)
    with transaction.atomic():
        Node.objects.partial_rebuild(tree_id)
        after = {r[0]: r for r in Node.objects.filter(subject_id=subject_id).values_list(*fields)}
        transaction.set_rollback(True)
    moved = sum(before[i][2:5] != after[i][2:5] for i in before)

    kids: dict[int | None, list[int]] = {}
    for id_, parent_id, *_ in before.values():
        kids.setdefault(parent_id, []).append(id_)
    # Subtrees from the parent pointers, each node's after its children's.
    below: dict[int, set[int]] = {}
    order, stack = [], list(kids.get(None, []))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(kids.get(i, []))
    for i in reversed(order):
        below[i] = set(kids.get(i, []))
        for child in kids.get(i, []):
            below[i] |= below[child]
    by_tree: dict[int, list[tuple[int, int]]] = {}
    for id_, _parent, lft, _rght, _level, tree in before.values():
        by_tree.setdefault(tree, []).append((lft, id_))
    for nodes in by_tree.values():
        nodes.sort()

    def nested(id_: int) -> set[int]:
        _i, _p, lft, rght, _level, tree = before[id_]
        nodes = by_tree[tree]
        lo, hi = bisect_left(nodes, (lft + 1, -1)), bisect_right(nodes, (rght - 1, float("inf")))
        return {n for _, n in nodes[lo:hi]}

    wrong_desc = sum(nested(i) != below.get(i, set()) for i in before)
    sample = rng.sample(sorted(before), min(SAMPLE, len(before)))
    wrong_anc = 0
    for id_ in sample:
        node = Node.objects.get(pk=id_)
        if set(node.get_descendants().values_list("id", flat=True)) != nested(id_):
            raise RuntimeError(f"bench.trees: get_descendants() of node {id_} is not what its bounds say")
        above, up = [], before[id_][1]
        while up is not None:
            above.append(up)
            up = before[up][1]
        wrong_anc += list(node.get_ancestors().values_list("id", flat=True)) != above[::-1]
    faults = []
    if repeated:
        faults.append(f"{repeated} lft/rght values repeated")
    if moved:
        faults.append(f"`partial_rebuild()` moves {moved} nodes")
    if wrong_desc:
        faults.append(f"wrong subtree for {wrong_desc} of {len(before):,} nodes")
    if wrong_anc:
        faults.append(f"wrong chain for {wrong_anc} of {len(sample)} sampled")
    return len(before), faults


# --- writes ----------------------------------------------------------------------------------


def writer(spec: dict, barrier, results) -> None:
    """One writer process: its own connection, its own id worker; waits for the others, then
    replies to each of ``spec["targets"]`` in turn."""
    try:
        import django

        django.setup()
        results.put(_write(spec, barrier))
    except BaseException as exc:  # noqa: BLE001 - the parent must hear of it, or it waits forever
        barrier.abort()
        results.put({"failed": f"{type(exc).__name__}: {exc}"})


def _write(spec: dict, barrier) -> dict:
    from django.db import DatabaseError, connection, transaction

    targets, prefix = spec["targets"], f"reply of writer {spec['writer']}"
    if spec["variant"] == "paths":
        from comments import ids, services
        from comments.models import Subject, User
        from comments.rendering import render_markdown

        subject = Subject.objects.select_related("site").get(pk=spec["subject_id"])
        author = User.objects.get(pk=spec["user_id"])
        ids.new_id()  # the process's worker lease, before the clock starts
        render_markdown("warm")
        # A first post loads what a process loads once (word lists, templates, connections):
        # made in a subject of its own, so the thread stays as the other stores' is.
        warm = Subject.objects.select_related("site").get(pk=spec["warm_subject_id"])
        services.comment_create(subject=warm, author=author, body=f"warm-up of writer {spec['writer']}")

        def one(i: int, target: int) -> None:
            services.comment_create(subject=subject, author=author, body=f"{prefix}, {i}", reply_to_id=target)

    elif spec["variant"] == "path-only":
        from bench.treeapp.models import PathNode
        from comments import ids, paths

        ids.new_id()

        def one(i: int, target: int) -> None:
            parent = PathNode.objects.get(pk=target)
            id_ = ids.new_id()
            path = paths.child_path(parent.path, id_)
            PathNode.objects.create(
                id=id_, parent=parent, subject_id=spec["subject_id"], path=path, body=f"{prefix}, {i}"
            )

    else:
        from bench.treeapp.models import Node

        table = connection.ops.quote_name(Node._meta.db_table)
        Node.objects.filter(pk=targets[0]).exists()

        def insert(i: int, target: int) -> None:
            parent = Node.objects.get(pk=target)
            Node.objects.create(parent=parent, subject_id=spec["subject_id"], body=f"{prefix}, {i}")

        def locked(i: int, target: int) -> None:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute(f"LOCK TABLE {table} IN EXCLUSIVE MODE")
                insert(i, target)

        def atomic(i: int, target: int) -> None:
            with transaction.atomic():
                insert(i, target)

        one = {"mptt-lock": locked, "mptt-atomic": atomic, "mptt-bare": insert}[spec["variant"]]

    from bench.post_cost import backend_cpu

    errors: Counter[str] = Counter()
    latencies: list[float] = []
    barrier.wait(timeout=BARRIER_SECONDS)
    started, cpu, db_cpu = time.monotonic(), time.process_time(), backend_cpu()
    for i, target in enumerate(targets):
        if time.monotonic() - started > spec["seconds"]:
            break
        t0 = time.perf_counter()
        try:
            one(i, target)
        except DatabaseError as exc:
            errors[_error_kind(exc)] += 1
        except Exception as exc:  # noqa: BLE001 - counted: what the tree's code raised under concurrency
            errors[type(exc).__name__] += 1
        else:
            latencies.append((time.perf_counter() - t0) * 1000)
    return {
        "started": started,
        "ended": time.monotonic(),
        "latencies": latencies,
        "errors": dict(errors),
        "cpu": time.process_time() - cpu,
        "db_cpu": backend_cpu() - db_cpu,
    }


def _error_kind(exc: Exception) -> str:
    state = getattr(exc.__cause__, "sqlstate", None)
    return {"40P01": "deadlock", "40001": "serialization failure"}.get(state or "", f"{type(exc).__name__} {state}")


@dataclass
class WriteResult:
    variant: str
    size: int
    writers: int
    replies: int
    attempted: int
    stored: int
    seconds: float
    latencies: list[float]
    cpu: float  # seconds of CPU of the writer processes, and of their PostgreSQL backends
    db_cpu: float
    errors: dict
    faults: list[str]


def run_writes(
    args: argparse.Namespace, stores: Stores, variant: str, size: int, writers: int, replies: int
) -> WriteResult:
    """A fresh thread of ``size`` comments in the variant's store, then ``writers`` processes
    reply into it at once."""
    import multiprocessing

    from django.db import connections

    thread = plan_thread(size, min(args.chain, size // 10), random.Random(args.seed + size))
    from comments import services
    from comments.models import Mode, Subject

    tree_id = 0
    warm = Subject(site=stores.site, key=f"warm-up-{variant}-{size}-{writers}", mode=Mode.TWO_LEVEL)
    services.subjects_create(stores.site, [warm])
    if variant == "paths":
        subject, (targets_of,) = stores.ours([thread])
    else:
        subject = Subject(site=stores.site, key=f"{variant}-{size}-{writers}", mode=Mode.TWO_LEVEL)
        services.subjects_create(stores.site, [subject])
        if variant == "path-only":
            targets_of = stores.path_only(thread, subject.pk)
        else:
            ((tree_id, targets_of),) = stores.mptt([thread], subject.pk)
    analyze()
    connections.close_all()
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(writers + 1), context.Queue()
    processes = []
    for w in range(writers):
        rng = random.Random(args.seed * 1000 + w)  # the same points for every variant
        spec = {
            "variant": variant,
            "writer": w,
            "subject_id": subject.pk,
            "warm_subject_id": warm.pk,
            "user_id": stores.user_ids[w % len(stores.user_ids)],
            "targets": [targets_of[rng.randrange(size)] for _ in range(replies)],
            "seconds": args.seconds,
        }
        process = context.Process(target=writer, args=(spec, barrier, results), daemon=True)
        process.start()
        processes.append(process)
    try:
        barrier.wait(timeout=BARRIER_SECONDS)
    except threading.BrokenBarrierError:
        pass  # a writer failed before the start: its message follows
    started = time.monotonic()
    outcomes = [results.get(timeout=3600) for _ in processes]
    for process in processes:
        process.join()
    failed = [o["failed"] for o in outcomes if "failed" in o]
    outcomes = [o for o in outcomes if "failed" not in o]
    ended = max((o["ended"] for o in outcomes), default=started)
    errors: Counter[str] = Counter()
    for o in outcomes:
        errors.update(o["errors"])
    if variant == "paths":
        rows, faults = check_ours(subject.pk)
    elif variant == "path-only":
        rows, faults = check_path_only(subject.pk)
    else:
        rows, faults = check_mptt(subject.pk, tree_id, random.Random(args.seed))
    if failed:  # the run is reported, marked: a writer that fails says nothing of the tree
        print(f"bench.trees: {len(failed)} writers failed: {failed[0]}", file=sys.stderr)
        faults.insert(0, f"**{len(failed)} writers failed** ({failed[0][:80]})")
    return WriteResult(
        variant=variant,
        size=size,
        writers=writers,
        replies=replies,
        attempted=sum(len(o["latencies"]) + sum(o["errors"].values()) for o in outcomes),
        stored=rows - size,
        seconds=ended - started,
        latencies=[x for o in outcomes for x in o["latencies"]],
        cpu=sum(o["cpu"] for o in outcomes),
        db_cpu=sum(o["db_cpu"] for o in outcomes),
        errors=dict(errors),
        faults=faults,
    )


# --- reads -----------------------------------------------------------------------------------


@dataclass
class ReadResult:
    label: str
    rows: int
    ours: list[float]
    mptt: list[float]


def run_reads(args: argparse.Namespace, stores: Stores) -> list[ReadResult]:
    from django.db import connection

    from bench.treeapp.models import Node
    from comments import paths
    from comments.models import Comment

    rng = random.Random(args.seed)
    thread = plan_thread(args.thread, args.chain, rng)
    # Other threads of the same subject around it (in mptt, other trees of the same table), so
    # that neither store's table is the read thread alone.
    others: list[Thread] = []
    while sum(len(t) for t in others) < args.others:
        others.append(plan_thread(rng.randint(1, 2 * OTHER_THREAD), 0, rng))
    threads = others[: len(others) // 2] + [thread] + others[len(others) // 2 :]
    subject, comment_threads = stores.ours(threads)
    mptt_threads = stores.mptt(threads, subject.pk)
    comment_ids, node_ids = comment_threads[len(others) // 2], mptt_threads[len(others) // 2][1]
    analyze()
    kids = thread.children()
    sizes = [0] * len(thread)
    for i in range(len(thread) - 1, 0, -1):
        sizes[thread.parent[i]] += sizes[i] + 1
    # A reply with about 1% of the thread below it, off the chain.
    chain = set(thread.ancestors(thread.chain_tail)) | {thread.chain_tail}
    middle = min((i for i in range(1, len(thread)) if i not in chain), key=lambda i: abs(sizes[i] - len(thread) // 100))
    index_of_comment = {c: i for i, c in enumerate(comment_ids)}
    index_of_node = {n: i for i, n in enumerate(node_ids)}

    def subtree(i: int):
        comment = Comment.objects.get(pk=comment_ids[i])
        node = Node.objects.get(pk=node_ids[i])
        low, high = paths.subtree_bounds(comment.path)
        ours = Comment.objects.filter(subject_id=subject.pk, path__gt=low, path__lt=high).order_by("path")
        return ours, node.get_descendants(), thread.descendants(i, kids)

    def ancestors(i: int):
        comment = Comment.objects.get(pk=comment_ids[i])
        node = Node.objects.get(pk=node_ids[i])

        def ours_ids():
            return paths.split_path(comment.path)[:-1]

        def ours_rows():
            return Comment.objects.filter(subject_id=subject.pk, pk__in=paths.split_path(comment.path)[:-1]).order_by(
                "path"
            )

        return ours_ids, ours_rows, node.get_ancestors(), thread.ancestors(i)

    results: list[ReadResult] = []

    def measure(label: str, want: list[int], ours, mptt) -> None:
        got_ours = [index_of_comment[x if isinstance(x, int) else x[0]] for x in ours()]
        got_mptt = [index_of_node[x if isinstance(x, int) else x[0]] for x in mptt()]
        if not got_ours == got_mptt == want:
            sys.exit(f"bench.trees: {label}: the stores answer differently ({len(got_ours)} vs {len(got_mptt)} rows)")
        for _ in range(10):
            ours()
            mptt()
        ours_ms: list[float] = []
        mptt_ms: list[float] = []
        for _ in range(args.reads):
            for call, samples in ((ours, ours_ms), (mptt, mptt_ms)):
                started = time.perf_counter()
                call()
                samples.append((time.perf_counter() - started) * 1000)
        results.append(ReadResult(label, len(want), ours_ms, mptt_ms))

    for name, i in (("the top-level comment", 0), (f"a reply ({thread.depth[middle]} down)", middle)):
        ours_qs, mptt_qs, want = subtree(i)
        measure(
            f"subtree of {name}, ids",
            want,
            lambda q=ours_qs: list(q.values_list("id", flat=True)),
            lambda q=mptt_qs: list(q.values_list("id", flat=True)),
        )
        measure(
            f"subtree of {name}, rows",
            want,
            lambda q=ours_qs: list(q.values_list(*OURS_ROW)),
            lambda q=mptt_qs: list(q.values_list(*MPTT_ROW)),
        )
    ours_ids, ours_rows, mptt_qs, want = ancestors(thread.chain_tail)
    depth = thread.depth[thread.chain_tail]
    measure(
        f"chain of a reply {depth} down, ids",
        want,
        ours_ids,
        lambda: list(mptt_qs.values_list("id", flat=True)),
    )
    measure(
        f"chain of a reply {depth} down, rows",
        want,
        lambda: list(ours_rows().values_list(*OURS_ROW)),
        lambda: list(mptt_qs.values_list(*MPTT_ROW)),
    )
    connection.close()
    return results


# --- the report ------------------------------------------------------------------------------


def _ms(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


def read_table(results: list[ReadResult], thread: int) -> list[str]:
    out = [
        f"| read, thread of {thread:,} comments | rows | paths, ms | mptt, ms | mptt / paths |",
        "|---|---:|---:|---:|---:|",
    ]
    for r in results:
        ours, mptt = statistics.median(r.ours), statistics.median(r.mptt)
        out.append(f"| {r.label} | {r.rows:,} | {ours:.3f} | {mptt:.3f} | {mptt / ours:.1f} |")
    return out


def write_table(results: list[WriteResult]) -> list[str]:
    out = [
        "| thread | writes | writers × replies | stored / tried | replies/s | p50 / p99 ms | CPU ms/reply: app + db "
        "| errors | tree afterwards |",
        "|---:|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in results:
        rate = r.stored / r.seconds if r.seconds else 0.0
        lat = f"{_ms(r.latencies, 50):.1f} / {_ms(r.latencies, 99):.1f}" if r.latencies else "-"
        errors = ", ".join(f"{n} {kind}" for kind, n in sorted(r.errors.items())) or "none"
        faults = "; ".join(r.faults) or "correct"
        per = max(r.stored, 1) / 1000
        cpu = f"{r.cpu / per:.1f} + {r.db_cpu / per:.1f}"
        out.append(
            f"| {r.size:,} | {VARIANTS[r.variant]} | {r.writers} × {r.replies} | {r.stored:,} / {r.attempted:,} | "
            f"{rate:,.0f} | {lat} | {cpu} | {errors} | {faults} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    environment(args)
    recreate_database(args.database_url)
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    from bench.core import machine

    started, load_before = time.monotonic(), os.getloadavg()
    try:
        call_command("migrate", interactive=False, verbosity=0, run_syncdb=True)
        info = machine()
        stores = Stores(args.seed)
        print(f"bench.trees: {info.get('cpu')}, {info['nproc']} CPUs; {info.get('database')}", flush=True)
        reads = run_reads(args, stores)
        print(f"bench.trees: reads done ({time.monotonic() - started:.0f} s)", flush=True)
        writes = []
        for size in args.write_sizes:
            for variant in args.variant_keys:
                runs = (1, args.writers) if variant in SINGLE_TOO else (args.writers,)
                for writers in runs:
                    replies = args.replies if variant in SINGLE_TOO else args.unlocked_replies
                    result = run_writes(args, stores, variant, size, writers, replies)
                    writes.append(result)
                    print(
                        f"bench.trees: {variant}, thread of {size:,}, {writers} writers: {result.stored} stored in "
                        f"{result.seconds:.1f} s ({time.monotonic() - started:.0f} s)",
                        flush=True,
                    )
    finally:
        connections.close_all()
        if not args.keep:
            recreate_database(args.database_url, drop_only=True)
    print()
    print("\n".join(read_table(reads, args.thread)))
    print()
    print("\n".join(write_table(writes)))
    print()
    load = "/".join(f"{x:.1f}" for x in (*load_before, *os.getloadavg()))
    print(
        f"Reads: median of {args.reads} after 10 warm-up ones, the stores alternating, in one process "
        "through the ORM. Writes: separate processes, one connection each, started together, each stopping after "
        f"its replies or {args.seconds:.0f} s; replies/s = replies stored / wall time of the slowest writer; "
        "p50 / p99 of the replies stored; CPU of the writer processes and of their PostgreSQL backends (from /proc) "
        "per reply stored. Each writer posts once in a subject of its own before the start. Both stores "
        f"commit durably. Python {info['python']}, Django {info['django']}, {info.get('database')}, "
        f"{info['nproc']} CPUs, {info.get('cpu')}; load average (1/5/15 min) {load} before/after; "
        f"{time.monotonic() - started:.0f} s in all."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
