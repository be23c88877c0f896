"""Review tasks carry their comment's subject_id, the distribution column of the comment
tables (infra.citus): filled from the comments on a populated database, before the comment
keys become composite (comments 0006), whose foreign keys need it."""

from django.db import migrations, models


def fill_subject_ids(apps, schema_editor):
    task_table = schema_editor.quote_name("moderation_task")
    comment_table = schema_editor.quote_name("comment_index")
    schema_editor.execute(
        f"UPDATE {task_table} SET subject_id = "
        f"(SELECT c.subject_id FROM {comment_table} c WHERE c.id = {task_table}.comment_id)"
    )


class Migration(migrations.Migration):

    dependencies = [
        ('comments', '0004_site_signin_methods'),
        ('moderation', '0003_audit_decisions_by_comment'),
    ]
    run_before = [
        ('comments', '0006_citus_keys'),
    ]

    operations = [
        migrations.AddField(
            model_name='reviewtask',
            name='subject_id',
            field=models.BigIntegerField(null=True),
        ),
        migrations.RunPython(fill_subject_ids, migrations.RunPython.noop),
        migrations.AlterField(
            model_name='reviewtask',
            name='subject_id',
            field=models.BigIntegerField(),
        ),
    ]
