from django.apps import AppConfig


class MemoriesConfig(AppConfig):
    name = "memories"
    verbose_name = "Memories"

    def ready(self) -> None:
        from . import producers  # noqa: F401  registers this app's variable producers
        from . import tasks  # noqa: F401  registers the turn-commit audit hook
