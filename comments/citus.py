"""The Citus plan of the schema (docs/citus.md): which table is distributed by subject (or, the
subjects' keys, by site), which is a reference table copied to every node, which stays local on
the coordinator.

The comment tables are distributed by ``subject_id`` and co-located, so every read or write of
one subject's comments, likes, reports and review tasks is a router query that one worker
answers. Their primary and unique keys carry ``subject_id`` as their last column: Citus can
only enforce a key on a shard when it contains the distribution column, and with the column
last the key still serves every lookup by comment id alone (ids are unique by generation,
``comments.ids``), so no index had to be added. A subject is found by its site's key for it
through ``comment_subject_key``, distributed by ``site_id`` in a co-location group of its own:
its key ``(site_id, key)`` is unique per site, which no table distributed by subject could
enforce. Django keeps ``id`` as the model's primary key
(it cannot point a foreign key at a composite one); the composite keys and the foreign keys
``(comment_id, subject_id) -> comment_index (id, subject_id)`` exist on PostgreSQL only, made
by migrations (``postgresql_only``), and the embedded SQLite keeps its single-column keys.

Tables are named as strings: the plan covers every app's tables without importing them.
``scripts/check-citus-schema`` holds a live database to this plan.
"""

from __future__ import annotations

from django.db import migrations

DISTRIBUTION_COLUMN = "subject_id"

# Distributed tables co-located with ``comment_subject``: table -> its distribution column.
_BY_SUBJECT = {
    "comment_subject": "id",
    "comment_index": DISTRIBUTION_COLUMN,
    "comment_content": DISTRIBUTION_COLUMN,
    "likes_like": DISTRIBUTION_COLUMN,
    "moderation_report": DISTRIBUTION_COLUMN,
    "moderation_task": DISTRIBUTION_COLUMN,
    "notifications_subscription": DISTRIBUTION_COLUMN,
}
# The subjects' keys, distributed by site: a new page of a site writes one row, which a
# reference table would write on every node; the lookup by (site_id, key) goes to one shard.
_BY_SITE = {"comment_subject_key": "site_id"}

# Every distributed table -> its distribution column, and -> its co-location group (named by
# its first table). Citus joins, and points foreign keys, only within a group.
DISTRIBUTED = {**_BY_SUBJECT, **_BY_SITE}
COLOCATION = {**dict.fromkeys(_BY_SUBJECT, "comment_subject"), **dict.fromkeys(_BY_SITE, "comment_subject_key")}

# Distributed tables whose distribution column is their own bigint identity: an INSERT need not
# give it, since the coordinator draws it and routes the row (Citus 11.2 and later). A new
# subject is made so, on the first reader's request for a new page.
DRAWN_DISTRIBUTION = frozenset({"comment_subject"})

# Reference tables: small, read by the router queries above (joined, or checked on a post),
# written rarely; a copy on every worker.
REFERENCE = frozenset(
    {
        "comments_site",
        "comments_site_moderators",
        "comments_user",
        "comments_user_groups",
        "comments_user_user_permissions",
        "comments_follow",
        "comments_externalidentity",
        "comments_apitoken",
        "moderation_word",
        "moderation_sanction",
        "portability_site_privacy",
        "auth_group",
        "auth_group_permissions",
        "auth_permission",
        "django_content_type",
    }
)

# Local tables, on the coordinator only: queues, logs and bookkeeping that no router query
# joins (Citus local tables may point at reference tables). Stale like states are a short list
# every flush sweeps whole.
LOCAL = frozenset(
    {
        "comments_idworkerlease",
        "comments_deferredtask",
        "comments_idempotentrequest",
        "likes_stalelikestate",
        "moderation_audit",
        "notifications_notification",
        "notifications_preferences",
        "portability_item",
        "portability_run",
        "portability_staged",
        "webhooks_endpoint",
        "webhooks_delivery",
        "accounts_emailaccount",
        "accounts_emaillink",
        "accounts_signinhandoff",
        "accounts_guest",
        # django-allauth's (sign-in with GitHub, Google and OpenID Connect providers): read only
        # while a reader signs in, by user or by provider account.
        "account_emailaddress",
        "account_emailconfirmation",
        "socialaccount_socialaccount",
        "socialaccount_socialapp",
        "socialaccount_socialtoken",
        # django-axes' (password guessing): failed logins by username and address, read at a login.
        "axes_accessattempt",
        "axes_accessattemptexpiration",
        "axes_accessfailurelog",
        "axes_accesslog",
        "django_admin_log",
        "django_migrations",
        "django_session",
    }
)

# Keys the plan knows to break, (table, key) -> why it is not fixed yet; reported, not failed.
# None today: the last, comment_subject's unique (site_id, key), became comment_subject_key.
KNOWN_GAPS: dict[tuple[str, str], str] = {}


def postgresql_only(sql: str, reverse_sql: str) -> migrations.RunPython:
    """A migration step that runs ``sql`` (``reverse_sql`` backwards) on PostgreSQL and does
    nothing elsewhere: the composite keys are the distributed deployment's, and SQLite keeps
    the shape its model state describes."""

    def run(text):
        def step(apps, schema_editor):
            if schema_editor.connection.vendor == "postgresql":
                schema_editor.execute(text, params=None)

        return step

    return migrations.RunPython(run(sql), run(reverse_sql))


def primary_key_with_subject(table: str) -> migrations.RunPython:
    """On PostgreSQL, ``table``'s primary key ``id`` becomes ``(id, subject_id)`` (and back)."""
    swap = f"ALTER TABLE {table} DROP CONSTRAINT {table}_pkey, ADD CONSTRAINT {table}_pkey PRIMARY KEY"
    return postgresql_only(f"{swap} (id, subject_id)", f"{swap} (id)")


# --- the checks (scripts/check-citus-schema) -----------------------------------------------

_KEYS_SQL = """
    SELECT rel.relname, ix.relname, ix_info.indisprimary,
           array(SELECT a.attname FROM unnest(ix_info.indkey) WITH ORDINALITY AS k(n, i)
                 JOIN pg_attribute a ON a.attrelid = rel.oid AND a.attnum = k.n ORDER BY k.i)
    FROM pg_index ix_info
    JOIN pg_class rel ON rel.oid = ix_info.indrelid
    JOIN pg_class ix ON ix.oid = ix_info.indexrelid
    JOIN pg_namespace ns ON ns.oid = rel.relnamespace
    WHERE ix_info.indisunique AND ns.nspname = current_schema()
    ORDER BY 1, 2
"""

_FOREIGN_KEYS_SQL = """
    SELECT k.conname, src.relname, dst.relname,
           array(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY AS c(n, i)
                 JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = c.n ORDER BY c.i),
           array(SELECT a.attname FROM unnest(k.confkey) WITH ORDINALITY AS c(n, i)
                 JOIN pg_attribute a ON a.attrelid = k.confrelid AND a.attnum = c.n ORDER BY c.i)
    FROM pg_constraint k
    JOIN pg_class src ON src.oid = k.conrelid
    JOIN pg_class dst ON dst.oid = k.confrelid
    JOIN pg_namespace ns ON ns.oid = src.relnamespace
    WHERE k.contype = 'f' AND ns.nspname = current_schema()
    ORDER BY 2, 1
"""


def _kind(table: str) -> str | None:
    if table in DISTRIBUTED:
        return "distributed"
    if table in REFERENCE:
        return "reference"
    if table in LOCAL:
        return "local"
    return None


def schema_violations(cursor) -> tuple[list[str], list[str]]:
    """``(violations, known gaps)`` of the PostgreSQL schema ``cursor`` reads, against the plan:
    every table classified; every primary or unique key of a distributed table holds its
    distribution column; a foreign key between distributed tables joins tables of one
    co-location group and pairs their distribution columns; reference tables point only at
    reference tables, and nothing at a local table but a local table."""
    violations, gaps = [], []
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")
    tables = [name for (name,) in cursor.fetchall()]
    for table in tables:
        if _kind(table) is None:
            violations.append(f"{table}: not in the Citus plan (comments/citus.py): distributed, reference or local?")
    for table in sorted((set(DISTRIBUTED) | REFERENCE | LOCAL) - set(tables)):
        violations.append(f"{table}: in the Citus plan (comments/citus.py) but not in the database")
    for table in sorted(DRAWN_DISTRIBUTION & set(tables)):
        cursor.execute(
            "SELECT data_type, is_identity FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s AND column_name = %s",
            [table, DISTRIBUTED[table]],
        )
        if cursor.fetchone() != ("bigint", "YES"):
            violations.append(f"{table}: {DISTRIBUTED[table]} is not a bigint identity, which Citus would draw")
    cursor.execute(_KEYS_SQL)
    for table, key, primary, columns in cursor.fetchall():
        column = DISTRIBUTED.get(table)
        if column is None or column in columns:
            continue
        what = "primary key" if primary else "unique key"
        message = f"{table}: {what} {key} ({', '.join(columns)}) lacks the distribution column {column}"
        gap = KNOWN_GAPS.get((table, key))
        if gap is None:
            violations.append(message)
        else:
            gaps.append(f"{message}: known, {gap}")
    cursor.execute(_FOREIGN_KEYS_SQL)
    for key, source, target, columns, referenced in cursor.fetchall():
        kinds = (_kind(source), _kind(target))
        if None in kinds:
            continue  # reported above
        pairs = dict(zip(columns, referenced, strict=True))
        if kinds == ("distributed", "distributed"):
            if COLOCATION[source] != COLOCATION[target]:
                violations.append(
                    f"{source}: foreign key {key} -> {target} joins tables that are not co-located "
                    f"({COLOCATION[source]}'s group and {COLOCATION[target]}'s)"
                )
            elif pairs.get(DISTRIBUTED[source]) != DISTRIBUTED[target]:
                violations.append(
                    f"{source}: foreign key {key} ({', '.join(columns)}) -> {target} ({', '.join(referenced)}) "
                    f"does not pair {source}.{DISTRIBUTED[source]} with {target}.{DISTRIBUTED[target]}"
                )
        elif (
            kinds[1] == "distributed"
            or (kinds[0] == "reference" and kinds[1] == "local")
            or (kinds[1] == "local" and kinds[0] != "local")
        ):
            violations.append(
                f"{source} ({kinds[0]}): foreign key {key} -> {target} ({kinds[1]}) is not allowed by Citus"
            )
    return violations, gaps


def _pinned_aliases(statement, aliases: dict[str, frozenset[str]]) -> tuple[set[str], set[str], set[str]]:
    """Of the distributed tables' ``aliases`` (alias -> the columns that place a row: its
    distribution column): those whose
    distribution column the statement's conditions set to a value (parameters and constants:
    what Citus prunes shards by; a column of another table, such as a row set's, is not one),
    those whose distribution column they equate with another's, and the distribution columns
    set to a value unqualified."""
    from sqlglot import exp

    def distribution(side) -> bool:
        if not isinstance(side, exp.Column):
            return False
        if side.table:
            return side.name in aliases.get(side.table, ())
        return any(side.name in columns for columns in aliases.values())

    def value(node) -> bool:
        return node.find(exp.Column) is None and node.find(exp.Select) is None

    valued: set[str] = set()
    joined: set[str] = set()
    unqualified: set[str] = set()
    conditions = [
        *statement.find_all(exp.Where),
        *(j.args["on"] for j in statement.find_all(exp.Join) if j.args.get("on")),
    ]
    for condition in conditions:
        for predicate in condition.find_all(exp.EQ, exp.In):
            if isinstance(predicate, exp.EQ):
                sides = [predicate.this, predicate.expression]
                values = [s for s in sides if value(s)]
            else:
                sides = [predicate.this]
                values = [] if predicate.args.get("query") else predicate.expressions
            pinned = [s for s in sides if distribution(s)]
            if len(pinned) == 2:
                joined.update(s.table for s in pinned)
            elif not pinned or not values or not all(value(v) for v in values):
                continue
            elif pinned[0].table:
                valued.add(pinned[0].table)
            elif pinned:
                unqualified.add(pinned[0].name)
    return valued, joined, unqualified


def query_violations(sql: str, *, comment_by_id: bool = False) -> list[str]:
    """Why ``sql`` (PostgreSQL, ``%s`` placeholders) would not be routed to the shards of the
    subjects it names: distributed tables of more than one co-location group (the subjects'
    keys with the comment tables: no one shard holds both), a distributed table it reads or
    writes with no condition on its distribution column (set to a value, or equated to that of
    a table that is), or an INSERT into one that does not give the column (unless the
    coordinator draws it, ``DRAWN_DISTRIBUTION``). Empty for a statement that names no
    distributed table.

    ``comment_by_id``: a SELECT may find comments by their ids instead (the API names a comment
    by id alone, so the first read of one asks every shard; what follows must name the
    subject it found)."""
    import sqlglot
    from sqlglot import exp

    try:
        statement = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError as error:
        return [f"not understood by the check ({str(error).splitlines()[0]})"]
    groups = sorted({COLOCATION[t.name] for t in statement.find_all(exp.Table) if t.name in DISTRIBUTED})
    if not groups:
        return []
    problems, written = [], []
    if len(groups) > 1:
        problems.append(
            f"it names tables of co-location groups that Citus cannot join in one query: {', '.join(groups)}"
        )
    for insert in statement.find_all(exp.Insert):
        target = insert.this
        table = target.this if isinstance(target, exp.Schema) else target
        written.append(table)
        given = {c.name for c in target.expressions} if isinstance(target, exp.Schema) else set()
        if table.name in DISTRIBUTED and DISTRIBUTED[table.name] not in given and table.name not in DRAWN_DISTRIBUTION:
            problems.append(f"INSERT INTO {table.name} does not give {DISTRIBUTED[table.name]}")
    read = [
        (t.name, t.alias_or_name)
        for t in statement.find_all(exp.Table)
        if t.name in DISTRIBUTED and not any(t is w for w in written)
    ]
    by_id = comment_by_id and isinstance(statement, exp.Select)
    placing = {
        a: frozenset({DISTRIBUTED[t], "id"} if by_id and t == "comment_index" else {DISTRIBUTED[t]}) for t, a in read
    }
    valued, joined, unqualified = _pinned_aliases(statement, placing)
    for table, alias in read:
        column = DISTRIBUTED[table]
        if alias in valued or alias in joined or placing[alias] & unqualified:
            continue
        problems.append(f"{table} (as {alias}) is not filtered by {column}")
    if read and not valued and not unqualified and not problems:
        problems.append(
            "its distributed tables are joined on their distribution columns, but none is filtered by a value"
        )
    return problems
