from django.apps import AppConfig

from infra.citus import Tables


class PortabilityConfig(AppConfig):
    """Data in and out: importing a site's history from other comment systems, exporting a
    site, and a user's own data (export and erasure)."""

    name = "portability"
    citus_tables = Tables(
        reference=frozenset({"portability_site_privacy"}),
        local=frozenset({"portability_item", "portability_run", "portability_staged"}),
    )
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from comments import hooks

        # "Your data" in the widget, beside the reader's name: download it, or delete the account.
        hooks.register_widget_part(
            hooks.WidgetPart(place="user", template="portability/_mydata.html", script="comments/mydata.js")
        )
