from django.apps import AppConfig


class LikesConfig(AppConfig):
    name = "likes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from comments import hooks

        from .queries import liked_sql

        hooks.register_liked_sql(liked_sql)
