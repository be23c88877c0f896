"""The comment tables' keys carry subject_id, the distribution column (infra.citus), on
PostgreSQL: comment_index's primary key becomes (id, subject_id), comment_content's
(comment_id, subject_id), and every foreign key pointing at a comment, whichever app's table it
is in, becomes (<column>, subject_id) -> comment_index (id, subject_id), under its old name.
The tables are found in the catalogue, so this app names none of the others'; each of them
carries subject_id by then (moderation 0004 runs before this). A row whose subject_id is not its
comment's fails the new key, and the migration with it.

Django keeps ``id`` as the model's key and checks none of these foreign keys itself
(db_constraint=False: it cannot point at a composite key); SQLite keeps its single-column keys
and foreign keys.

A thread's queries now name the subject beside the root (``subject_id = $1 AND root_id = $2``).
PostgreSQL then joined the whole subject's index to the thread's (a BitmapAnd) and sorted,
instead of walking the thread's index in order: the thread indexes take subject_id after
root_id, so one index answers both conditions, and statistics of the dependency (a root
implies its subject) keep the estimate of a thread's rows what it was."""

from django.db import migrations, models

from infra.citus import postgresql_only

# Foreign keys into comment_index, one row per key: its table, name and referencing column.
_KEYS_INTO_COMMENTS = """
    CREATE TEMPORARY TABLE citus_comment_keys ON COMMIT DROP AS
    SELECT k.conrelid::regclass AS table_name, k.conname AS key_name, a.attname AS column_name
    FROM pg_constraint k
    JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
    WHERE k.contype = 'f' AND k.confrelid = 'comment_index'::regclass;
    FOR key IN SELECT * FROM citus_comment_keys LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', key.table_name, key.key_name);
    END LOOP;
"""


def _keys_sql(*, comment_key: str, content_key: str, referencing: str, referenced: str) -> str:
    """Drop every foreign key into comment_index, give comment_index and comment_content the
    primary keys named, and make each foreign key again over ``referencing`` (``%I`` is its
    own column) -> comment_index (``referenced``)."""
    return f"""
DO $$
DECLARE key record;
BEGIN
    {_KEYS_INTO_COMMENTS}
    ALTER TABLE comment_content DROP CONSTRAINT comment_content_pkey,
        ADD CONSTRAINT comment_content_pkey PRIMARY KEY ({content_key});
    ALTER TABLE comment_index DROP CONSTRAINT comment_index_pkey,
        ADD CONSTRAINT comment_index_pkey PRIMARY KEY ({comment_key});
    FOR key IN SELECT * FROM citus_comment_keys LOOP
        EXECUTE format(
            'ALTER TABLE %s ADD CONSTRAINT %I FOREIGN KEY ({referencing}) '
            'REFERENCES comment_index ({referenced}) DEFERRABLE INITIALLY DEFERRED',
            key.table_name, key.key_name, key.column_name
        );
    END LOOP;
END $$;
"""


WITH_SUBJECT = _keys_sql(
    comment_key="id, subject_id", content_key="comment_id, subject_id", referencing="%I, subject_id", referenced="id, subject_id"
)
WITHOUT_SUBJECT = _keys_sql(comment_key="id", content_key="comment_id", referencing="%I", referenced="id")


def _unchecked_by_django(model_name, name, field):
    return migrations.SeparateDatabaseAndState(
        state_operations=[migrations.AlterField(model_name=model_name, name=name, field=field)]
    )


class Migration(migrations.Migration):

    dependencies = [
        ('comments', '0005_site_signin_link_email'),
    ]

    operations = [
        postgresql_only(WITH_SUBJECT, WITHOUT_SUBJECT),
        postgresql_only(
            "CREATE STATISTICS comment_thread_in_subject (dependencies) ON root_id, subject_id FROM comment_index; "
            "ANALYZE comment_index",
            "DROP STATISTICS comment_thread_in_subject",
        ),
        migrations.RemoveIndex(
            model_name='comment',
            name='comment_thread_by_time',
        ),
        migrations.RemoveIndex(
            model_name='comment',
            name='comment_thread_by_likes',
        ),
        migrations.AddIndex(
            model_name='comment',
            index=models.Index(fields=['root', 'subject', 'id'], name='comment_thread_by_time'),
        ),
        migrations.AddIndex(
            model_name='comment',
            index=models.Index(models.F('root'), models.F('subject'), models.OrderBy(models.F('like_count'), descending=True), models.F('id'), name='comment_thread_by_likes'),
        ),
        _unchecked_by_django('comment', 'reply_to', models.ForeignKey(
            blank=True, db_constraint=False, db_index=False, null=True,
            on_delete=models.deletion.CASCADE, related_name='direct_replies', to='comments.comment',
        )),
        _unchecked_by_django('comment', 'root', models.ForeignKey(
            blank=True, db_constraint=False, db_index=False, null=True,
            on_delete=models.deletion.CASCADE, related_name='thread', to='comments.comment',
        )),
        _unchecked_by_django('commentcontent', 'comment', models.OneToOneField(
            db_constraint=False, on_delete=models.deletion.CASCADE, primary_key=True,
            related_name='content', serialize=False, to='comments.comment',
        )),
    ]
