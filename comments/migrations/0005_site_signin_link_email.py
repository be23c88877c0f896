from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("comments", "0004_site_signin_methods")]

    operations = [
        migrations.AddField("site", "signin_link_email", models.BooleanField("join sign-ins by verified email", default=False)),
    ]
