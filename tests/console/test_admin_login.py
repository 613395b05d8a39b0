"""Admin logins: Django's password validators, and failed logins throttled per username and per address."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from tests.factories import SuperuserFactory

pytestmark = pytest.mark.django_db

LOGIN = reverse("admin:login")
PASSWORD = "pw"  # SuperuserFactory's; validators apply when a password is set by a person, not to fixtures


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def log_in(username: str, password: str, *, address: str = "10.0.0.1") -> int:
    """POST the admin login form from `address`; the status: 302 logged in, 200 refused, 429 locked out."""
    client = Client(REMOTE_ADDR=address)
    response = client.post(LOGIN, {"username": username, "password": password, "next": "/admin/"})
    if response.status_code == 302:
        assert client.get("/admin/").status_code == 200  # really logged in
    return response.status_code


def fail(times: int, username: str = "op", **kwargs) -> None:
    for _ in range(times):
        assert log_in(username, "wrong password", **kwargs) == 200


def lock_out(username: str = "op", **kwargs) -> None:
    """Fail up to the limit: the limit-th failure is answered with the lock-out already."""
    fail(settings.AXES_FAILURE_LIMIT - 1, username, **kwargs)
    assert log_in(username, "wrong password", **kwargs) == 429


def test_repeated_wrong_passwords_lock_the_username_out_even_with_the_right_one():
    SuperuserFactory(username="op", password=PASSWORD)
    fail(settings.AXES_FAILURE_LIMIT - 1)
    assert log_in("op", PASSWORD) == 302  # below the limit: the operator who mistyped gets in (and is reset)
    lock_out()
    assert log_in("op", PASSWORD) == 429
    page = Client(REMOTE_ADDR="10.0.0.1").post(LOGIN, {"username": "op", "password": PASSWORD}).content.decode()
    assert "Too many failed logins" in page and "0:15:00" in page


def test_the_username_is_locked_out_from_every_address():
    SuperuserFactory(username="op", password=PASSWORD)
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        fail(1, address=f"10.0.1.{n}")
    assert log_in("op", "wrong password", address="10.0.1.99") == 429
    assert log_in("op", PASSWORD, address="10.0.2.1") == 429


def test_an_address_guessing_many_usernames_is_locked_out_for_every_username():
    SuperuserFactory(username="op", password=PASSWORD)
    for n in range(settings.AXES_FAILURE_LIMIT - 1):
        fail(1, username=f"guess-{n}", address="10.0.3.1")
    assert log_in("guess-last", "wrong password", address="10.0.3.1") == 429
    assert log_in("op", PASSWORD, address="10.0.3.1") == 429
    assert log_in("op", PASSWORD, address="10.0.3.2") == 302  # the operator elsewhere is not locked out


def test_the_lock_out_ends_after_the_cool_off_and_failing_on_does_not_extend_it():
    from axes.models import AccessAttempt  # django-axes' record of the failures (here: without the app, no table)

    SuperuserFactory(username="op", password=PASSWORD)
    lock_out()
    last_failure = AccessAttempt.objects.get().attempt_time
    for _ in range(3):  # the attacker keeps guessing during the lock-out
        assert log_in("op", "wrong password") == 429
    attempt = AccessAttempt.objects.get()
    assert (attempt.failures_since_start, attempt.attempt_time) == (settings.AXES_FAILURE_LIMIT, last_failure)

    # The cool-off is counted from the last recorded failure: move it back past the cool-off.
    AccessAttempt.objects.update(attempt_time=last_failure - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    assert log_in("op", PASSWORD) == 302


def test_a_weak_password_is_refused_when_an_operator_sets_one(admin_client):
    target = User.objects.create_user("staff", password="an original passphrase 7", is_staff=True)
    url = reverse("admin:auth_user_password_change", args=[target.pk])
    for weak in ("1", "password123", "12345678901234", "staff"):
        response = admin_client.post(url, {"password1": weak, "password2": weak})
        assert response.status_code == 200 and response.context["form"].errors, weak
    target.refresh_from_db()
    assert target.check_password("an original passphrase 7")
    strong = "ochre lantern tidewater 42"
    assert admin_client.post(url, {"password1": strong, "password2": strong}).status_code == 302
    target.refresh_from_db()
    assert target.check_password(strong)


def test_behind_a_trusted_proxy_the_address_is_the_one_the_proxy_saw(settings):
    settings.ADMIN_LOGIN_TRUSTED_PROXIES = 1
    SuperuserFactory(username="op", password=PASSWORD)

    def log_in_via_proxy(username: str, password: str, forwarded_for: str) -> int:
        client = Client(REMOTE_ADDR="10.0.9.1", HTTP_X_FORWARDED_FOR=forwarded_for)
        return client.post(LOGIN, {"username": username, "password": password}).status_code

    for n in range(settings.AXES_FAILURE_LIMIT - 1):  # the attacker makes up a new left-most entry each time
        assert log_in_via_proxy(f"guess-{n}", "wrong password", f"192.0.2.{n}, 198.51.100.7") == 200
    assert log_in_via_proxy("guess-last", "wrong password", "192.0.2.99, 198.51.100.7") == 429
    assert log_in_via_proxy("op", PASSWORD, "198.51.100.7") == 429  # the address the proxy saw is locked out
    assert log_in_via_proxy("op", PASSWORD, "203.0.113.5") == 302  # another client behind the same proxy is not
