"""The Citus plan of the schema (docs/citus.md): which table is distributed (and by which
column, co-located with which), which is a reference table copied to every node, which stays
local on the coordinator; and the checks that hold a database and the hot queries to it.

Each app declares its own tables, as ``citus_tables`` on its AppConfig (a ``Tables``); the plan
is their union (``plan()``), so this module names no app's table. The core's declaration says
why the comment tables are distributed by ``subject_id``, co-located, with their keys ending in
it. Django keeps ``id`` as the model's primary key (it cannot point a foreign key at a composite
one); the composite keys and foreign keys exist on PostgreSQL only, made by migrations
(``postgresql_only``), and the embedded SQLite keeps its single-column keys.

``scripts/check-citus-schema`` holds a live database to this plan.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.apps import apps
from django.db import migrations


@dataclass(frozen=True)
class Tables:
    """One app's tables in the plan. ``distributed``: table -> (its distribution column, its
    co-location group, named by the group's first table; Citus joins, and points foreign keys,
    only within a group). ``drawn``: distributed tables whose distribution column is their own
    bigint identity, which the coordinator draws on an INSERT that does not give it (Citus 11.2
    and later). ``reference``: small tables, written rarely, a copy on every worker.
    ``local``: on the coordinator only, joined by no router query. ``known_gaps``: keys the
    plan knows to break, (table, key) -> why not fixed yet; reported, not failed."""

    distributed: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    drawn: frozenset[str] = frozenset()
    reference: frozenset[str] = frozenset()
    local: frozenset[str] = frozenset()
    known_gaps: Mapping[tuple[str, str], str] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """Every installed app's ``Tables`` together."""

    distributed: dict[str, str]  # table -> its distribution column
    colocation: dict[str, str]  # table -> its co-location group
    drawn: frozenset[str]
    reference: frozenset[str]
    local: frozenset[str]
    known_gaps: dict[tuple[str, str], str]

    def kind(self, table: str) -> str | None:
        if table in self.distributed:
            return "distributed"
        if table in self.reference:
            return "reference"
        if table in self.local:
            return "local"
        return None


@functools.cache
def plan() -> Plan:
    declared = [getattr(config, "citus_tables", None) for config in apps.get_app_configs()]
    parts = [tables for tables in declared if tables is not None]
    return Plan(
        distributed={table: column for p in parts for table, (column, _) in p.distributed.items()},
        colocation={table: group for p in parts for table, (_, group) in p.distributed.items()},
        drawn=frozenset().union(*(p.drawn for p in parts)),
        reference=frozenset().union(*(p.reference for p in parts)),
        local=frozenset().union(*(p.local for p in parts)),
        known_gaps={gap: why for p in parts for gap, why in p.known_gaps.items()},
    )


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


# --- distributing the schema (after every migrate) ------------------------------------------

_CITUS_TABLES_SQL = """
    SELECT c.relname,
           CASE WHEN p.partmethod = 'h' THEN 'distributed'
                WHEN p.repmodel = 't' THEN 'reference' ELSE 'local' END
    FROM pg_dist_partition p
    JOIN pg_class c ON c.oid = p.logicalrelid
    JOIN pg_namespace ns ON ns.oid = c.relnamespace
    WHERE ns.nspname = current_schema()
"""


def workers(cursor) -> int:
    """How many active primary workers this database's Citus coordinator has registered: 0 on
    plain PostgreSQL (no extension) or any other database, or a coordinator with none yet."""
    if cursor.db.vendor != "postgresql":
        return 0
    cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'citus'")
    if cursor.fetchone() is None:
        return 0
    cursor.execute("SELECT count(*) FROM pg_dist_node WHERE groupid <> 0 AND noderole = 'primary' AND isactive")
    return cursor.fetchone()[0]


def is_coordinator(connection) -> bool:
    """Whether ``connection``'s database is a Citus coordinator with workers: asked once per
    connection object (a thread's, for the life of the process) and kept on it."""
    known = getattr(connection, "_citus_coordinator", None)
    if known is None:
        known = False
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                known = workers(cursor) > 0
        connection._citus_coordinator = known
    return known


def _referenced_first(tables: set[str], foreign_keys: list[tuple[str, str]]) -> list[str]:
    """``tables`` ordered so that a table comes after every one of them it points at: Citus
    distributes (or copies) a table's foreign keys with it, and their targets must be there."""
    points_at = {t: {dst for src, dst in foreign_keys if src == t and dst in tables and dst != t} for t in tables}
    ordered: list[str] = []
    while points_at:
        ready = sorted(t for t, targets in points_at.items() if not targets - set(ordered))
        if not ready:
            raise ValueError(f"foreign keys in a ring among {sorted(points_at)}")
        ordered += ready
        for t in ready:
            del points_at[t]
    return ordered


_TOUCHING_FOREIGN_KEYS_SQL = """
    SELECT src.relname, k.conname, pg_get_constraintdef(k.oid)
    FROM pg_constraint k
    JOIN pg_class src ON src.oid = k.conrelid
    JOIN pg_class dst ON dst.oid = k.confrelid
    JOIN pg_namespace ns ON ns.oid = src.relnamespace
    WHERE k.contype = 'f' AND ns.nspname = current_schema()
      AND (src.relname = ANY(%s) OR dst.relname = ANY(%s))
    ORDER BY 1, 2
"""


def distribution_steps(cursor) -> list[tuple[str, list]]:
    """The statements that take this database's tables to the plan, in the order they must run
    (``(sql, params)``; empty when it is there, or on a database that is not a Citus coordinator
    with workers). A table already distributed, or already a reference table, is left as it
    is: run again, this adds only the tables created since.

    1. Every foreign key from or to a table about to change comes off. Made a reference
       table, a table turns every PostgreSQL table connected to it by foreign keys into a
       Citus local table; Citus cannot make a distributed table out of one with an identity
       column (a subject's id, a like's), and one made a reference table after that starts
       its identity again from 1.
    2. Reference tables, each after the tables it points at.
    3. Each co-location group: its first table (the group's name) in a group of its own, the
       others co-located with it.
    4. The foreign keys back, as they were: Citus checks and propagates them now that both
       ends are its tables, and makes a local table pointing at a reference table a Citus
       local table (it keeps its rows and identity).
    Local tables stay PostgreSQL's; those pointing at a reference table become Citus local
    tables when their target becomes one (Citus does it)."""
    if not workers(cursor):
        return []
    the = plan()
    cursor.execute(_CITUS_TABLES_SQL)
    placed = dict(cursor.fetchall())
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    present = {name for (name,) in cursor.fetchall()}
    cursor.execute(_FOREIGN_KEYS_SQL)
    foreign_keys = [(source, target) for _, source, target, _, _ in cursor.fetchall()]
    reference = {t for t in the.reference & present if placed.get(t) != "reference"}
    distributed = {t for t in set(the.distributed) & present if placed.get(t) != "distributed"}
    changing = reference | distributed
    cursor.execute(_TOUCHING_FOREIGN_KEYS_SQL, [sorted(changing), sorted(changing)])
    detached = cursor.fetchall()
    steps: list[tuple[str, list]] = []
    steps += [(f"ALTER TABLE {table} DROP CONSTRAINT {key}", []) for table, key, _ in detached]
    steps += [("SELECT create_reference_table(%s)", [t]) for t in _referenced_first(reference, foreign_keys)]
    for group in sorted(set(the.colocation.values())):
        members = {t for t in distributed if the.colocation[t] == group}
        for table in _referenced_first(members, foreign_keys):
            colocate_with = "none" if table == group else group
            steps.append(
                (
                    "SELECT create_distributed_table(%s, %s, colocate_with => %s)",
                    [table, the.distributed[table], colocate_with],
                )
            )
    steps += [(f"ALTER TABLE {table} ADD CONSTRAINT {key} {definition}", []) for table, key, definition in detached]
    return steps


def distribute(connection, *, say=None) -> int:
    """Run ``distribution_steps`` on ``connection`` (the migrate's database) in one transaction:
    how many statements ran. ``say``: told each step (migrate's output)."""
    from django.db import transaction

    if connection.vendor != "postgresql":
        return 0
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        steps = distribution_steps(cursor)
        if steps:
            # A foreign key from a local table to a reference table converts the local tables
            # connected to it, which Citus cannot do in a transaction that touched a
            # distributed table over parallel connections.
            cursor.execute("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'")
        for sql, params in steps:
            if say is not None:
                say(f"  Citus: {sql.removeprefix('SELECT ')} {params or ''}".rstrip())
            cursor.execute(sql, params or None)
    return len(steps)


def distribute_after_migrate(*, using: str, verbosity: int = 1, **kwargs) -> None:
    """``post_migrate``'s receiver (the core app connects it): an operator's Citus deployment
    is to register the workers and migrate. Every migrate ends here, so the tables a later
    migration creates are distributed by the same run that made them."""
    from django.db import connections

    stdout = kwargs.get("stdout")
    say = stdout.write if stdout is not None and verbosity >= 1 else None
    distribute(connections[using], say=say)


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


def schema_violations(cursor) -> tuple[list[str], list[str]]:
    """``(violations, known gaps)`` of the PostgreSQL schema ``cursor`` reads, against the plan:
    every table classified; every primary or unique key of a distributed table holds its
    distribution column; a foreign key between distributed tables joins tables of one
    co-location group and pairs their distribution columns; reference tables point only at
    reference tables, and nothing at a local table but a local table."""
    the = plan()
    violations, gaps = [], []
    cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1")
    tables = [name for (name,) in cursor.fetchall()]
    for table in tables:
        if the.kind(table) is None:
            violations.append(
                f"{table}: not in the Citus plan (an app's citus_tables): distributed, reference or local?"
            )
    for table in sorted((set(the.distributed) | the.reference | the.local) - set(tables)):
        violations.append(f"{table}: in the Citus plan (an app's citus_tables) but not in the database")
    for table in sorted(the.drawn & set(tables)):
        cursor.execute(
            "SELECT data_type, is_identity FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s AND column_name = %s",
            [table, the.distributed[table]],
        )
        if cursor.fetchone() != ("bigint", "YES"):
            violations.append(f"{table}: {the.distributed[table]} is not a bigint identity, which Citus would draw")
    cursor.execute(_KEYS_SQL)
    for table, key, primary, columns in cursor.fetchall():
        column = the.distributed.get(table)
        if column is None or column in columns:
            continue
        what = "primary key" if primary else "unique key"
        message = f"{table}: {what} {key} ({', '.join(columns)}) lacks the distribution column {column}"
        gap = the.known_gaps.get((table, key))
        if gap is None:
            violations.append(message)
        else:
            gaps.append(f"{message}: known, {gap}")
    cursor.execute(_FOREIGN_KEYS_SQL)
    for key, source, target, columns, referenced in cursor.fetchall():
        kinds = (the.kind(source), the.kind(target))
        if None in kinds:
            continue  # reported above
        pairs = dict(zip(columns, referenced, strict=True))
        if kinds == ("distributed", "distributed"):
            if the.colocation[source] != the.colocation[target]:
                violations.append(
                    f"{source}: foreign key {key} -> {target} joins tables that are not co-located "
                    f"({the.colocation[source]}'s group and {the.colocation[target]}'s)"
                )
            elif pairs.get(the.distributed[source]) != the.distributed[target]:
                violations.append(
                    f"{source}: foreign key {key} ({', '.join(columns)}) -> {target} ({', '.join(referenced)}) "
                    f"does not pair {source}.{the.distributed[source]} with {target}.{the.distributed[target]}"
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


def query_violations(sql: str, *, found_by_id: frozenset[str] = frozenset()) -> list[str]:
    """Why ``sql`` (PostgreSQL, ``%s`` placeholders) would not be routed to the shards of the
    subjects it names: distributed tables of more than one co-location group (the subjects'
    keys with the comment tables: no one shard holds both), a distributed table it reads or
    writes with no condition on its distribution column (set to a value, or equated to that of
    a table that is), or an INSERT into one that does not give the column (unless the
    coordinator draws it, ``Tables.drawn``). Empty for a statement that names no
    distributed table.

    ``found_by_id``: distributed tables a SELECT may find rows of by their ``id`` instead (the
    API names a comment by id alone, so the first read of one asks every shard; what follows
    must name the subject it found)."""
    import sqlglot
    from sqlglot import exp

    try:
        statement = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError as error:
        return [f"not understood by the check ({str(error).splitlines()[0]})"]
    the = plan()
    groups = sorted({the.colocation[t.name] for t in statement.find_all(exp.Table) if t.name in the.distributed})
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
        column = the.distributed.get(table.name)
        if column is not None and column not in given and table.name not in the.drawn:
            problems.append(f"INSERT INTO {table.name} does not give {column}")
    read = [
        (t.name, t.alias_or_name)
        for t in statement.find_all(exp.Table)
        if t.name in the.distributed and not any(t is w for w in written)
    ]
    by_id = found_by_id if isinstance(statement, exp.Select) else frozenset()
    placing = {a: frozenset({the.distributed[t], "id"} if t in by_id else {the.distributed[t]}) for t, a in read}
    valued, joined, unqualified = _pinned_aliases(statement, placing)
    for table, alias in read:
        if alias in valued or alias in joined or placing[alias] & unqualified:
            continue
        problems.append(f"{table} (as {alias}) is not filtered by {the.distributed[table]}")
    if read and not valued and not unqualified and not problems:
        problems.append(
            "its distributed tables are joined on their distribution columns, but none is filtered by a value"
        )
    return problems
