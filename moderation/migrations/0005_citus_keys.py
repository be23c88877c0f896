"""Every key of reports and review tasks carries subject_id, the distribution column
(infra.citus).

Both engines: a report is unique per (comment, user, subject_id), an open task per
(comment, subject_id). PostgreSQL only: the primary keys become (id, subject_id); the foreign
keys to the comment are already composite (comments 0006), so Django stops making its own."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from infra.citus import primary_key_with_subject


class Migration(migrations.Migration):

    dependencies = [
        ('comments', '0006_citus_keys'),
        ('moderation', '0004_task_subject_id'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='report',
                name='comment',
                field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='reports', to='comments.comment'),
            ),
            migrations.AlterField(
                model_name='reviewtask',
                name='comment',
                field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='review_tasks', to='comments.comment'),
            ),
        ]),
        migrations.RemoveConstraint(
            model_name='report',
            name='report_once_per_user',
        ),
        migrations.AddConstraint(
            model_name='report',
            constraint=models.UniqueConstraint(fields=('comment', 'user', 'subject_id'), name='report_once_per_user'),
        ),
        migrations.RemoveConstraint(
            model_name='reviewtask',
            name='task_one_open_per_comment',
        ),
        migrations.AddConstraint(
            model_name='reviewtask',
            constraint=models.UniqueConstraint(condition=models.Q(('state', 'open')), fields=('comment', 'subject_id'), name='task_one_open_per_comment'),
        ),
        primary_key_with_subject('moderation_report'),
        primary_key_with_subject('moderation_task'),
    ]
