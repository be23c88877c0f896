import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """Subjects are found by their site and key through a table of their own (issue 17), keyed
    by ``(site_id, key)``: on Citus it is distributed by ``site_id``, where that key can be
    enforced, and ``comment_subject`` (distributed by ``id``) loses its unique ``(site_id, key)``,
    which it could not keep (docs/citus.md). Every existing subject gets its row, in one
    statement; backwards, the unique key comes back and the table goes."""

    dependencies = [("comments", "0007_guests")]

    operations = [
        migrations.CreateModel(
            name="SubjectKey",
            fields=[
                ("pk", models.CompositePrimaryKey("site", "key", blank=True, editable=False, primary_key=True, serialize=False)),
                ("site", models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, to="comments.site")),
                ("key", models.CharField(max_length=255)),
                (
                    "subject",
                    models.ForeignKey(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="keys",
                        to="comments.subject",
                    ),
                ),
            ],
            options={"db_table": "comment_subject_key"},
        ),
        migrations.RunSQL(
            "INSERT INTO comment_subject_key (site_id, key, subject_id) SELECT site_id, key, id FROM comment_subject",
            migrations.RunSQL.noop,
        ),
        migrations.RemoveConstraint(model_name="subject", name="subject_lookup_by_site_key"),
    ]
