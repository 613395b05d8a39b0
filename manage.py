#!/usr/bin/env python
"""Django's command-line utility for memoryhub."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    from memoryhub.secret_key import KEYED_COMMANDS, mark_one_off_command

    mark_one_off_command(sys.argv)  # migrate, dev_key, … run without SECRET_KEY; servers do not
    if sys.argv[1:2] and sys.argv[1] in KEYED_COMMANDS:
        try:  # Django would start the command anyway and fail at its first use of the settings
            from django.conf import settings

            settings.SECRET_KEY  # noqa: B018
        except ImproperlyConfigured as exc:
            sys.exit(f"manage.py {sys.argv[1]}: {exc}")

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
