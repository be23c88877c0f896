from django.db import migrations, models


class Migration(migrations.Migration):
    """Guest comments (issue 14): the mark of a guest author, and how a site moderates guests
    (pre-moderation unless it says otherwise)."""

    dependencies = [("comments", "0006_citus_keys")]

    operations = [
        migrations.AddField("user", "is_guest", models.BooleanField(default=False)),
        migrations.AddField(
            "site", "guest_moderation",
            models.CharField(
                "moderation of guest comments", max_length=4, default="pre",
                choices=[("post", "post-moderation"), ("pre", "pre-moderation")],
            ),
        ),
    ]
