"""Check DJANGO_SUPERUSER_PASSWORD against AUTH_PASSWORD_VALIDATORS before `createsuperuser --noinput`.

Django validates a password typed at the prompt but takes the non-interactive one as given; `python3 dev.py
superuser --noinput` runs this first, so a script cannot create an operator whose password is `1`.
"""

from __future__ import annotations

import os

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Refuse a DJANGO_SUPERUSER_PASSWORD that the password validators refuse (exit 1, with their reasons)."

    def handle(self, *args, **options) -> None:
        password = os.environ.get("DJANGO_SUPERUSER_PASSWORD")
        if not password:
            return  # createsuperuser --noinput then creates a user without a usable password, as Django does
        user = get_user_model()(
            username=os.environ.get("DJANGO_SUPERUSER_USERNAME", ""), email=os.environ.get("DJANGO_SUPERUSER_EMAIL", "")
        )
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise CommandError("DJANGO_SUPERUSER_PASSWORD: " + " ".join(exc.messages)) from None
