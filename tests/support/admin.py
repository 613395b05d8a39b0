"""Staff users with exactly the permissions a test names, to show what each admin page or action needs."""

from __future__ import annotations

import itertools

from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import Permission, User
from django.contrib.contenttypes.models import ContentType
from django.test import Client

_numbers = itertools.count(1)


def staff_client(*permissions: str) -> Client:
    """A client logged in as a new staff user (not a superuser) holding `permissions` ("app_label.codename")."""
    user = User.objects.create_user(f"staff-{next(_numbers)}", password="pw", is_staff=True)
    for name in permissions:
        app_label, codename = name.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    client = Client()
    client.force_login(user)
    return client


def log_messages(obj, flag: int | None = None) -> list[str]:
    """The admin LogEntry messages on `obj` (any model), oldest first."""
    content_type = ContentType.objects.get_for_model(obj, for_concrete_model=False)
    entries = LogEntry.objects.filter(content_type=content_type, object_id=str(obj.pk)).order_by("id")
    if flag is not None:
        entries = entries.filter(action_flag=flag)
    return list(entries.values_list("change_message", flat=True))
