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
