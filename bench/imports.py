"""The import of a big Disqus export for ``docs/benchmarks.md`` (its ``<!-- import:start -->``
block): a generated export of ``--comments`` comments (``bench.disqus_export``: a thread per 50
posts, an author per 20, half of them replies) imported into an empty site by
``manage.py import_comments``, run as a child process: its wall time, its peak resident memory
(the kernel's ``ru_maxrss`` of the child and the render processes it forks), its CPU, and the
statements it sent per 1,000 comments; then the checks every import must pass: in SQL over the
whole site, replies after the comments they answer, top-level ids in date order, floors 1..n,
every subject's counts and every comment's reply count; and the repository's reconcile (every
counter, descendants included) on the 100 biggest subjects and 100 others drawn at random (on
all 20,000 it would take longer than the import). With ``--again``, the same file is imported a
second time (nothing may be added).

    DJANGO_SECRET_KEY=bench DATABASE_URL=postgres://postgres@127.0.0.1:5432/import_bench \\
    REDIS_URL=redis://127.0.0.1:6379/10 .venv/bin/python -m bench.imports --comments 1000000

The database is created if missing and migrated. The site (``import-bench-<comments>``) must not
exist yet: the figures are those of an import into an empty site, so use a fresh database or
another ``--comments``. The export is written to ``var/bench/`` once and reused, and so are the
run's figures: ``--report`` checks the site again and rewrites the block from them.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

from bench.core import BASE_DIR, calibrate, configure, cpu_sample, cpu_share, write_marked_block

BLOCK_START, BLOCK_END = "<!-- import:start -->", "<!-- import:end -->"
TARGET_SECONDS, TARGET_RSS_MB = 600, 300
COMMAND = (
    "DJANGO_SECRET_KEY=bench DATABASE_URL=postgres://postgres@127.0.0.1:5432/import_bench "
    "REDIS_URL=redis://127.0.0.1:6379/10 nice -n 0 .venv/bin/python -m bench.imports"
)
RECONCILED = 200  # subjects the reconcile runs on: the biggest half, a random half
FAULTS = (
    "reply_before_parent",
    "reply_across_subjects",
    "top_level_out_of_date_order",
    "top_level_floor_gaps",
    "reply_floor_gaps",
    "subject_counter_faults",
    "reply_count_faults",
    "subjects_fixed",
)
PHASES = ("stage", "place_threads", "sift_comments", "insert_comments")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--comments", type=int, default=1_000_000, help="comments in the export (1,000,000)")
    parser.add_argument("--workers", type=int, default=1, help="the import's --workers (1)")
    parser.add_argument("--again", action="store_true", help="import the same file a second time (must add nothing)")
    parser.add_argument("--output", default="docs/benchmarks.md", help="file with the block to replace; '-' for none")
    parser.add_argument(
        "--report",
        action="store_true",
        help="no import: check the site of the last run and write the block from its saved figures (var/bench/)",
    )
    parser.add_argument("--profile", action="store_true", help="profile the command's CPU (var/bench/import-N.prof)")
    parser.add_argument("--allow-sqlite", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # JSON: what the child process runs
    return parser.parse_args(argv)


# --- the child: the import command, with its statements counted ----------------------------


def child(spec: dict) -> None:
    """Run ``import_comments`` as a person would, counting its statements (COPYs apart) and
    timing its phases; the counts go to ``spec["stats"]`` as JSON."""
    from django.core.management import call_command
    from django.db import connection

    from comments.services import storage
    from portability.services import imports, staging, threads

    statements: Counter = Counter()
    phases: dict[str, float] = {}

    def count(execute, sql, params, many, context):
        statements[sql.split(None, 1)[0].upper()] += 1
        return execute(sql, params, many, context)

    # COPY runs outside the execute wrapper: counted where it is called, the staged rows'
    # (portability.sql.insert_rows) and the comments' (comments.services.storage._insert).
    for module in (imports, staging, threads):
        copy = module.insert_rows

        def counted_copy(model, columns, rows, _copy=copy):
            statements["COPY" if connection.vendor == "postgresql" else "INSERT"] += 1
            return _copy(model, columns, rows)

        module.insert_rows = counted_copy  # type: ignore[attr-defined]
    insert = storage._insert

    def counted_insert(model, columns, instances):
        if connection.vendor == "postgresql" and len(instances) >= storage._COPY_FROM:
            statements["COPY"] += 1
        return insert(model, columns, instances)

    storage._insert = counted_insert
    for name in PHASES:
        original = getattr(imports._ImportJob, name)

        def timed(self, *args, _original=original, _name=name):
            started = time.monotonic()
            try:
                return _original(self, *args)
            finally:
                phases[_name] = time.monotonic() - started

        setattr(imports._ImportJob, name, timed)
    # The cost of each batch of comments, in wall time and in CPU of this process and of the
    # PostgreSQL backend serving it: the CPU figures do not depend on what else the machine runs.
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    batches = []
    insert_batch = imports._ImportJob._insert_batch

    def measured_batch(self, rows, *, last):
        before = (time.monotonic(), time.process_time(), _process_cpu(backend))
        waiting = insert_batch(self, rows, last=last)
        after = (time.monotonic(), time.process_time(), _process_cpu(backend))
        batches.append([len(rows) - len(waiting), *(a - b for a, b in zip(after, before, strict=True))])
        return waiting

    imports._ImportJob._insert_batch = measured_batch
    backend_start = _process_cpu(backend)
    with connection.execute_wrapper(count):
        if spec.get("profile"):
            # CPU time, not wall time: on a shared machine the wall clock mostly measures the
            # others.
            profiler = cProfile.Profile(time.process_time)
            profiler.runcall(
                call_command,
                "import_comments",
                spec["file"],
                site=spec["site"],
                format="disqus",
                workers=spec["workers"],
            )
            profiler.dump_stats(spec["profile"])
        else:
            call_command("import_comments", spec["file"], site=spec["site"], format="disqus", workers=spec["workers"])
    stats = {
        "statements": statements,
        "phases": phases,
        "batches": batches,
        "backend_cpu": _process_cpu(backend) - backend_start,
    }
    Path(spec["stats"]).write_text(json.dumps(stats))


def _process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process of this machine (the PostgreSQL backend)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_child(file: str, site: str, workers: int, profile: str = "") -> dict:
    """The import in a child process: its output (echoed), wall time, peak RSS and CPU."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        stats_path = handle.name
    spec = {"file": file, "site": site, "workers": workers, "stats": stats_path, "profile": profile}
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.imports", "--child", json.dumps(spec)],
        cwd=BASE_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    for line in proc.stdout:
        print("  " + line.rstrip("\n"), flush=True)
        lines.append(line.rstrip("\n"))
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"bench: the import failed (exit {proc.returncode})")
    stats = json.loads(Path(stats_path).read_text())
    os.unlink(stats_path)
    return {
        "wall": wall,
        "rss_mb": usage.ru_maxrss / 1024,
        "cpu": usage.ru_utime + usage.ru_stime,
        "lines": lines,
        **stats,
    }


PROFILED = {  # where the command's CPU goes: label -> (file, function) as the profile names them
    "staging: reading the XML and COPY into the staging table": ("staging.py", "stage"),
    "of which the Disqus reader (lxml)": ("disqus.py", "records"),
    "HTML to Markdown (nh3, portability.markup)": ("markup.py", "to_markdown"),
    "Markdown to HTML (markdown-it-py, nh3: comments.rendering)": ("rendering.py", "render_markdown"),
    "inserting the batches (ids, tree, floors, counters, COPY)": ("imports.py", "_insert_batch"),
    "reading staged rows back": ("staging.py", "next_comments"),
}


def profile_summary(path: str) -> list[str]:
    """The command's CPU by part, from its profile (cumulative CPU seconds of each part's
    function, render processes excluded)."""
    import pstats

    stats = pstats.Stats(path).stats  # type: ignore[attr-defined]  # the raw table, not in typeshed

    def cumulative(file: str, function: str) -> float:
        return sum(
            c for (f, _, name), (_, _, _, c, _) in stats.items() if name == function and os.path.basename(f) == file
        )

    total = cumulative("__init__.py", "call_command")
    lines = [f"profile (CPU seconds of the command's process): {total:.0f} s in all"]
    for label, (file, function) in PROFILED.items():
        seconds = cumulative(file, function)
        lines.append(f"{label}: {seconds:.1f} s ({seconds / total:.0%})" if total else f"{label}: {seconds:.1f} s")
    return lines


def spread(batches: list) -> dict:
    """The cost per 1,000 comments of the first, middle and last tenth of the batches: flat
    when the cost per comment does not grow with what is already imported."""
    tenth = max(1, len(batches) // 10)
    parts = {
        "first tenth": batches[:tenth],
        "middle tenth": batches[len(batches) // 2 - tenth // 2 :][:tenth],
        "last tenth": batches[-tenth:],
    }
    out = {}
    for name, part in parts.items():
        count = sum(b[0] for b in part) or 1
        out[name] = (count, *(sum(b[i] for b in part) / count * 1000 for i in (1, 2, 3)))
    return out


# --- checks over the imported site ----------------------------------------------------------


def check(site) -> dict:
    """What every import must leave, checked set-based over the whole site."""
    from django.db import connection

    from comments.models import Subject
    from comments.services import subject_reconcile_counters

    out = {}
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*), count(*) FILTER (WHERE c.depth = 0), count(*) FILTER (WHERE p.id IS NOT NULL AND p.id >= c.id), "
            "count(*) FILTER (WHERE c.reply_to_id IS NOT NULL AND p.subject_id <> c.subject_id) "
            "FROM comment_index c JOIN comment_subject s ON s.id = c.subject_id LEFT JOIN comment_index p ON p.id = c.reply_to_id "
            "WHERE s.site_id = %s",
            [site.pk],
        )
        out["comments"], out["top_level"], out["reply_before_parent"], out["reply_across_subjects"] = cursor.fetchone()
        # Top-level comments: ids in date order and floors 1..n per subject; replies: floors
        # 1..n per thread, in id order.
        cursor.execute(
            "SELECT count(*) FILTER (WHERE prev_at > created_at), count(*) FILTER (WHERE floor <> n) FROM ("
            "SELECT c.created_at, c.floor, lag(c.created_at) OVER w AS prev_at, row_number() OVER w AS n "
            "FROM comment_index c JOIN comment_subject s ON s.id = c.subject_id WHERE s.site_id = %s AND c.depth = 0 "
            "WINDOW w AS (PARTITION BY c.subject_id ORDER BY c.id)) t",
            [site.pk],
        )
        out["top_level_out_of_date_order"], out["top_level_floor_gaps"] = cursor.fetchone()
        cursor.execute(
            "SELECT count(*) FILTER (WHERE floor <> n) FROM (SELECT c.floor, row_number() OVER "
            "(PARTITION BY c.root_id ORDER BY c.id) AS n FROM comment_index c JOIN comment_subject s ON s.id = c.subject_id "
            "WHERE s.site_id = %s AND c.root_id IS NOT NULL) t",
            [site.pk],
        )
        out["reply_floor_gaps"] = cursor.fetchone()[0]
        # Every subject's and every comment's reply counters against the rows (the descendant
        # counts, a subtree each, are left to the reconcile below).
        counted = "c.status = 'published' AND c.visibility = 'public'"
        cursor.execute(
            f"SELECT count(*) FROM comment_subject s LEFT JOIN (SELECT c.subject_id, count(*) AS n, "
            f"count(*) FILTER (WHERE c.depth = 0) AS r FROM comment_index c JOIN comment_subject s ON s.id = c.subject_id "
            f"WHERE s.site_id = %s AND {counted} GROUP BY c.subject_id) t ON t.subject_id = s.id "
            "WHERE s.site_id = %s AND (s.comment_count <> coalesce(t.n, 0) OR s.root_count <> coalesce(t.r, 0))",
            [site.pk, site.pk],
        )
        out["subject_counter_faults"] = cursor.fetchone()[0]
        cursor.execute(
            f"SELECT count(*) FROM comment_index a JOIN comment_subject s ON s.id = a.subject_id LEFT JOIN ("
            f"SELECT coalesce(CASE WHEN c.root_id = c.reply_to_id THEN c.root_id END, c.reply_to_id) AS id, count(*) AS n "
            f"FROM comment_index c JOIN comment_subject s ON s.id = c.subject_id WHERE s.site_id = %s AND {counted} "
            f"AND c.reply_to_id IS NOT NULL AND c.depth > 0 GROUP BY 1) direct ON direct.id = a.id LEFT JOIN ("
            f"SELECT c.root_id AS id, count(*) AS n FROM comment_index c JOIN comment_subject s ON s.id = c.subject_id "
            f"WHERE s.site_id = %s AND {counted} AND c.root_id IS NOT NULL GROUP BY 1) thread ON thread.id = a.id "
            "WHERE s.site_id = %s AND a.reply_count <> CASE WHEN a.depth = 0 THEN coalesce(thread.n, 0) ELSE coalesce(direct.n, 0) END",
            [site.pk, site.pk, site.pk],
        )
        out["reply_count_faults"] = cursor.fetchone()[0]
    # The repository's own reconcile (every counter, descendants included) on the biggest
    # subjects and a random sample of the others: all of them would take longer than the import.
    subjects = Subject.objects.filter(site=site)
    biggest = list(subjects.order_by("-comment_count").values_list("pk", flat=True)[: RECONCILED // 2])
    sample = list(subjects.exclude(pk__in=biggest).order_by("?").values_list("pk", flat=True)[: RECONCILED // 2])
    fixed = 0
    for subject_id in biggest + sample:
        report = subject_reconcile_counters(subject_id=subject_id)
        fixed += bool(report.fixed_subject or report.fixed_comments)
    out["subjects"], out["subjects_reconciled"], out["subjects_fixed"] = subjects.count(), len(biggest + sample), fixed
    return out


# --- the report -----------------------------------------------------------------------------


def write_block(path: Path, block: str) -> None:
    write_marked_block(path, BLOCK_START, BLOCK_END, block)


def _postgres() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT version()")
        version = cursor.fetchone()[0].split(" on ")[0]
        settings = []
        for name in ("shared_buffers", "work_mem", "synchronous_commit"):
            cursor.execute(f"SHOW {name}")
            settings.append(f"{name}={cursor.fetchone()[0]}")
    return f"{version} ({', '.join(settings)}) on the same machine, over TCP"


def _ms(value) -> str:
    return "not recorded" if value is None else f"{value:.0f} ms"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.child:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
        import django

        django.setup()
        child(json.loads(args.child))
        return 0
    configure(args)
    from django.core.management import call_command

    from comments.models import Site

    call_command("migrate", verbosity=0)
    key = f"import-bench-{args.comments}"
    saved = BASE_DIR / "var" / "bench" / f"import-{args.comments}.json"
    if args.report:
        run = json.loads(saved.read_text())
    else:
        if Site.objects.filter(key=key).exists():
            raise SystemExit(f"bench: site {key!r} exists (an earlier run): use a fresh database or another --comments")
        run = measure(args, key)
        saved.write_text(json.dumps(run))
    return report(args, run, Site.objects.get(key=key))


def measure(args, key: str) -> dict:
    """Write the export if missing, import it into a new site: the run's figures."""
    from django.core.management import call_command

    from bench.core import code_version, machine
    from bench.disqus_export import write_disqus_export

    export = BASE_DIR / "var" / "bench" / f"disqus-{args.comments}.xml"
    if not export.exists():
        export.parent.mkdir(parents=True, exist_ok=True)
        print(f"bench: writing a Disqus export of {args.comments:,} comments to {export}", flush=True)
        started = time.monotonic()
        write_disqus_export(str(export) + ".part", comments=args.comments)
        os.replace(str(export) + ".part", export)
        print(f"  written in {time.monotonic() - started:.0f} s", flush=True)
    call_command("create_site", key, name=f"Import bench, {args.comments:,} comments")
    run = {
        "started_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": machine(),
        "postgres": _postgres(),
        "code": code_version(),
        "size_mb": export.stat().st_size / 1e6,
        "workers": args.workers,
        "load_start": _load(),
        "calibration_start": calibrate(),
        "command": f"manage.py import_comments --site {key} --format disqus {export.relative_to(BASE_DIR)}"
        + (f" --workers {args.workers}" if args.workers != 1 else ""),
    }
    cpu_before = cpu_sample()
    print(f"bench: {run['command']} (load average {run['load_start']})", flush=True)
    profile = str(BASE_DIR / "var" / "bench" / f"import-{args.comments}.prof") if args.profile else ""
    run["first"] = run_child(str(export), key, args.workers, profile)
    first = run["first"]
    run["share"] = cpu_share(
        cpu_before,
        cpu_sample(),
        own=first["cpu"] + first["backend_cpu"],
        own_label="the import (the command, its render processes, its PostgreSQL backend)",
        others_label="other users of the machine",
    )
    run["load_end"] = _load()
    print(
        f"  wall {first['wall']:.1f} s, peak RSS {first['rss_mb']:.0f} MB, CPU {first['cpu']:.1f} s, "
        f"PostgreSQL backend CPU {first['backend_cpu']:.1f} s; phases "
        + ", ".join(f"{k} {v:.1f} s" for k, v in first["phases"].items())
        + f"; statements {dict(first['statements'])}",
        flush=True,
    )
    for name, (count, wall, cpu, db) in spread(first["batches"]).items():
        print(
            f"  {name}: {count:,} comments, per 1,000: wall {wall:.2f} s, CPU {cpu:.2f} s, PostgreSQL CPU {db:.2f} s",
            flush=True,
        )
    if profile:
        run["profile"] = profile_summary(profile)
        print("\n".join(f"  {line}" for line in run["profile"]), flush=True)
    if args.again:
        print("bench: the same file again", flush=True)
        run["again"] = run_child(str(export), key, args.workers)
    run["calibration_end"] = calibrate()
    return run


def report(args, run: dict, site) -> int:
    """Check the imported site; print the verdicts and write the block."""
    print("bench: checking the imported site", flush=True)
    checked = check(site)
    print("  " + json.dumps(checked), flush=True)
    first, again = run["first"], run.get("again")
    n = checked["comments"]
    statements = Counter(first["statements"])
    per_thousand = sum(statements.values()) / max(n, 1) * 1000
    imported_again = None
    if again is not None:
        found = [re.search(r"comments imported: ([\d,]+)", line) for line in again["lines"]]
        imported_again = next((int(m.group(1).replace(",", "")) for m in found if m), None)
    faults = sum(checked[k] for k in FAULTS)
    verdicts = [
        (
            f"the import of {args.comments:,} comments < {TARGET_SECONDS // 60} minutes",
            f"{first['wall'] / 60:.1f} min",
            first["wall"] < TARGET_SECONDS,
        ),
        (f"peak RSS < {TARGET_RSS_MB} MB", f"{first['rss_mb']:.0f} MB", first["rss_mb"] < TARGET_RSS_MB),
        (
            "every comment imported; tree, floors and counters right",
            f"{n:,} comments; {faults} faults ("
            + ", ".join(f"{k.replace('_', ' ')} {checked[k]}" for k in FAULTS)
            + f"; the reconcile ran on {checked['subjects_reconciled']} of {checked['subjects']:,} subjects)",
            n == args.comments and not faults,
        ),
    ]
    if again is not None:
        verdicts.append(
            ("importing the same file again adds nothing", f"{imported_again} comments imported", imported_again == 0)
        )
    for target, measured, ok in verdicts:
        print(f"{'PASS' if ok else 'FAIL'}  {target}: {measured}")

    summary = [line for line in first["lines"] if not line.startswith(("reading:", "importing:"))]
    phases = first["phases"]
    phase_names = {
        "stage": "reading the file into the staging table",
        "place_threads": "threads to subjects",
        "sift_comments": "duplicates, known items, orphans, early replies",
        "insert_comments": "inserting the comments",
    }
    info = run["machine"]
    flags = f" --workers {run['workers']}" if run["workers"] != 1 else ""
    rss_of = "the command and its render processes" if run["workers"] > 1 else "the command"
    block = [
        BLOCK_START,
        "## Import",
        "",
        f"Generated by `bench/imports.py` on {run['started_at']}; re-run the command to refresh this section.",
        "",
        "```sh",
        f"{COMMAND} --comments {args.comments}{flags}{' --again' if again is not None else ''}",
        "```",
        "",
        f"- {info.get('nproc')} CPUs ({info.get('cpu', '?')}), {info.get('memory', '?')}; Python {info.get('python')}; "
        f"{run['postgres']}",
        f"- code measured: {run['code']}",
        f"- load average at the start {run['load_start']}, at the end {run['load_end']}; Python speed check (bench/core.py's "
        f"`calibrate()`): {_ms(run.get('calibration_start'))} before, {_ms(run.get('calibration_end'))} after",
        f"- CPU during the import: {run['share']}",
        "",
        f"The export: `bench.disqus_export` with {args.comments:,} posts ({run['size_mb']:,.0f} MB of XML): "
        f"{max(1, args.comments // 50):,} threads, {max(1, args.comments // 20):,} authors (40% guests), half the posts "
        "replies in conversation chains, 1% deleted, 0.5% spam, one reply in a thousand dated before its parent, HTML "
        f"messages of one to four paragraphs. The import: `{run['command']}` into an empty site, in a child process.",
        "",
        "| what | figure |",
        "|---|---:|",
        f"| wall time | {first['wall']:.0f} s ({first['wall'] / 60:.1f} min) |",
        f"| comments per second | {n / first['wall']:,.0f} |",
        f"| peak RSS ({rss_of}) | {first['rss_mb']:.0f} MB |",
        f"| CPU of {rss_of} (user + system) | {first['cpu']:.0f} s |",
        f"| CPU of the PostgreSQL backend serving it | {first['backend_cpu']:.0f} s |",
        *[f"| {phase_names[p]} (wall) | {phases[p]:.0f} s |" for p in PHASES if p in phases],
        f"| statements per 1,000 comments (COPYs included) | {per_thousand:.1f} |",
        f"| statements in all | {', '.join(f'{k} {v:,}' for k, v in statements.most_common())} |",
        *[
            f"| per 1,000 comments, {name} of the batches: wall, CPU, PostgreSQL CPU | {wall:.2f} s, {cpu:.2f} s, {db:.2f} s |"
            for name, (_, wall, cpu, db) in spread(first["batches"]).items()
        ],
    ]
    if again is not None:
        block += [
            f"| the same file again: wall time | {again['wall']:.0f} s |",
            f"| the same file again: peak RSS | {again['rss_mb']:.0f} MB |",
        ]
    if run.get("profile"):
        block += [
            "",
            f"Where the command's CPU goes (`--profile`, cProfile with a CPU clock): {run['profile'][0].split(': ', 1)[1]}",
            "",
        ]
        block += [f"- {line}" for line in run["profile"][1:]]
    block += [
        "",
        "The command's summary:",
        "",
        "```",
        *summary,
        "```",
        "",
        "### Targets",
        "",
        "| target | measured | result |",
        "|---|---|---|",
        *[f"| {t} | {m} | {'PASS' if ok else '**FAIL**'} |" for t, m, ok in verdicts],
        "",
        "<!-- import-notes:start -->",
        NOTES_PLACEHOLDER,
        "<!-- import-notes:end -->",
        BLOCK_END,
    ]
    text = "\n".join(block)
    if args.output != "-":
        path = BASE_DIR / args.output
        kept = re.search(
            r"<!-- import-notes:start -->.*?<!-- import-notes:end -->", path.read_text() if path.exists() else "", re.S
        )
        if kept:
            text = re.sub(
                r"<!-- import-notes:start -->.*?<!-- import-notes:end -->", lambda _: kept.group(0), text, flags=re.S
            )
        write_block(path, text)
        print(f"bench: wrote the import block of {args.output}")
    return 0 if all(ok for _, _, ok in verdicts) else 1


NOTES_PLACEHOLDER = "Notes: (hand-written; kept when the command rewrites the block)"


if __name__ == "__main__":
    raise SystemExit(main())
