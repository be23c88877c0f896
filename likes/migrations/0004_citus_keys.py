"""Every key of the like rows carries subject_id, the distribution column (infra.citus).

Both engines: the unique (comment, user) becomes (comment, user, subject_id), as the flush's
upsert names it. PostgreSQL only: the primary key becomes (id, subject_id); the foreign key to
the comment is already composite (comments 0006), so Django stops making its own; the likers
index carries subject_id, which the likers' read joins on, so it stays an index-only scan (the
other engines have no covering indexes). (Stale like states are a local table: every flush
sweeps them whole.)"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from infra.citus import primary_key_with_subject


class Migration(migrations.Migration):

    dependencies = [
        ('comments', '0006_citus_keys'),
        ('likes', '0003_drop_liked_by_user_index'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(state_operations=[
            migrations.AlterField(
                model_name='like',
                name='comment',
                field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=django.db.models.deletion.CASCADE, to='comments.comment'),
            ),
        ]),
        migrations.RemoveConstraint(
            model_name='like',
            name='like_by_comment_user',
        ),
        migrations.AddConstraint(
            model_name='like',
            constraint=models.UniqueConstraint(fields=('comment', 'user', 'subject_id'), name='like_by_comment_user'),
        ),
        primary_key_with_subject('likes_like'),
        migrations.RemoveIndex(
            model_name='like',
            name='like_likers_by_time',
        ),
        migrations.AddIndex(
            model_name='like',
            index=models.Index(condition=models.Q(('active', True)), fields=['comment', 'created_at', 'user'], include=('subject_id',), name='like_likers_by_time'),
        ),
    ]
