from django.apps import AppConfig


class LikesConfig(AppConfig):
    name = "likes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from comments import hooks

        from .queries import like_state_from_database

        hooks.register_like_state_provider(like_state_from_database)
