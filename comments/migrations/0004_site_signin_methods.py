from django.db import migrations, models


class Migration(migrations.Migration):
    """Sign-in methods per site. Sites that exist keep what they had (SSO alone); a new site
    takes SSO and email."""

    dependencies = [("comments", "0003_plural_names")]

    operations = [
        migrations.AddField("site", "signin_sso", models.BooleanField("sign-in by the host's SSO", default=True)),
        migrations.AddField("site", "signin_email", models.BooleanField("sign-in by email link", default=False)),
        migrations.AlterField("site", "signin_email", models.BooleanField("sign-in by email link", default=True)),
        migrations.AddField("site", "signin_oidc", models.JSONField("OpenID Connect providers", default=list, blank=True)),
        migrations.AddField("site", "signin_guests", models.BooleanField("guest comments", default=False)),
    ]
