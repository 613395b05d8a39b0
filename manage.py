#!/usr/bin/env python
"""Django's command-line utility for memoryhub."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    from django.core.management import execute_from_command_line

    from memoryhub.secret_key import mark_one_off_command

    mark_one_off_command(sys.argv)  # migrate, dev_key, … run without SECRET_KEY; servers do not

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
