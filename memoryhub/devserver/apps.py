from django.apps import AppConfig


class DevServerConfig(AppConfig):
    """`manage.py runserver` whose requests carry their raw path (memoryhub/api/raw_path.py); first in
    INSTALLED_APPS, so that its command is the one Django runs (the first app naming a command wins)."""

    name = "memoryhub.devserver"
    label = "devserver"
