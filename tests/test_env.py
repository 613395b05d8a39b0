"""Environment parsers (docs/contract.md): good values parse, absent ones default, malformed ones stop start-up."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from memoryhub.env import env_bool, env_float, env_int, env_list, env_str, env_url


@pytest.mark.parametrize(
    "raw, default, expected", [(None, "d", "d"), ("", "d", "d"), ("   ", None, None), (" x ", None, "x")]
)
def test_env_str_strips_and_treats_blank_as_unset(raw, default, expected):
    environ = {} if raw is None else {"NAME": raw}
    assert env_str("NAME", default, environ) == expected


def test_env_str_defaults_to_none():
    assert env_str("NAME", environ={}) is None


@pytest.mark.parametrize("raw", ["1", "true", "TRUE", "Yes", "on", " true "])
def test_env_bool_true_values(raw):
    assert env_bool("FLAG", False, {"FLAG": raw}) is True


@pytest.mark.parametrize("raw", ["0", "false", "False", "no", "OFF", ""])
def test_env_bool_false_values(raw):
    assert env_bool("FLAG", True, {"FLAG": raw}) is False


@pytest.mark.parametrize("default", [True, False])
def test_env_bool_absent_is_the_default(default):
    assert env_bool("FLAG", default, {}) is default


@pytest.mark.parametrize("raw", ["2", "yes please", "enabled", "tru"])
def test_env_bool_malformed_is_improperly_configured(raw):
    with pytest.raises(ImproperlyConfigured, match="FLAG"):
        env_bool("FLAG", False, {"FLAG": raw})


@pytest.mark.parametrize("raw, expected", [("5", 5), (" 42 ", 42), ("-3", -3), ("0", 0)])
def test_env_int_parses(raw, expected):
    assert env_int("N", 7, environ={"N": raw}) == expected


@pytest.mark.parametrize("environ", [{}, {"N": ""}, {"N": "  "}])
def test_env_int_absent_or_blank_is_the_default(environ):
    assert env_int("N", 7, environ=environ) == 7


@pytest.mark.parametrize("raw", ["five", "1.5", "1e3", "0x10", "12abc"])
def test_env_int_malformed_is_improperly_configured(raw):
    with pytest.raises(ImproperlyConfigured, match="N must be an integer"):
        env_int("N", 7, environ={"N": raw})


def test_env_int_below_the_minimum_is_improperly_configured():
    with pytest.raises(ImproperlyConfigured, match="at least 24"):
        env_int("HOURS", 48, minimum=24, environ={"HOURS": "23"})
    assert env_int("HOURS", 48, minimum=24, environ={"HOURS": "24"}) == 24


def test_env_float_parses_within_its_bounds_and_names_the_variable_otherwise():
    assert env_float("F", None, bounds=(-1.0, 1.0), environ={}) is None
    assert env_float("F", None, bounds=(-1.0, 1.0), environ={"F": " 0.2 "}) == 0.2
    for raw, message in (("x", "F must be a number"), ("1.5", "F must be between"), ("nan", "F must be between")):
        with pytest.raises(ImproperlyConfigured, match=message):
            env_float("F", None, bounds=(-1.0, 1.0), environ={"F": raw})


@pytest.mark.parametrize(
    "raw, expected",
    [("a,b", ["a", "b"]), (" a , b ,, ", ["a", "b"]), ("single", ["single"]), (",", [])],
)
def test_env_list_splits_on_commas(raw, expected):
    assert env_list("HOSTS", ["default"], {"HOSTS": raw}) == expected


def test_env_list_absent_is_a_copy_of_the_default():
    default = ["localhost"]
    value = env_list("HOSTS", default, {})
    assert value == default
    value.append("mutated")
    assert default == ["localhost"]


@pytest.mark.parametrize(
    "raw", ["postgres://u@h:5432/db", "postgresql://h/db", "sqlite:///tmp/x.sqlite3", " postgres://h/db "]
)
def test_env_url_accepts_the_allowed_schemes(raw):
    assert env_url("DATABASE_URL", ("postgres", "postgresql", "sqlite"), {"DATABASE_URL": raw}) == raw.strip()


@pytest.mark.parametrize("environ", [{}, {"DATABASE_URL": ""}])
def test_env_url_absent_is_none(environ):
    assert env_url("DATABASE_URL", ("postgres",), environ) is None


@pytest.mark.parametrize("raw", ["mysql://h/db", "postgres:/h/db", "h:5432/db", "redis://h"])
def test_env_url_with_another_scheme_is_improperly_configured(raw):
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        env_url("DATABASE_URL", ("postgres", "postgresql"), {"DATABASE_URL": raw})


def test_env_int_bounds():
    assert env_int("N", 5, minimum=1, maximum=10, environ={"N": "10"}) == 10
    with pytest.raises(ImproperlyConfigured, match="N must be at most 10, got 11"):
        env_int("N", 5, minimum=1, maximum=10, environ={"N": "11"})


def test_the_tool_token_default_lifetime_is_read_from_the_environment(tmp_path):
    probe = PROBE.split("print(")[0] + "print(settings.TOOL_TOKEN_DEFAULT_TTL_SECONDS)"
    result = start_settings(tmp_path, probe, TOOL_TOKEN_DEFAULT_TTL_SECONDS="600")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["600"]


# --- the settings module reads them at start-up -------------------------------------------------------

PROBE = (
    "import django; from django.conf import settings; django.setup(); "
    "print(settings.DATABASES['default']['ENGINE'], settings.CACHES['default']['BACKEND'], "
    "settings.CELERY_TASK_ALWAYS_EAGER)"
)


def start_settings(tmp_path, probe: str = PROBE, **overrides: str) -> subprocess.CompletedProcess:
    keep = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG", "PYTHONPATH"}}
    # A server needs SECRET_KEY whatever else is set (tests/test_secret_key.py shows the refusal without it).
    environ = {**keep, "DJANGO_SETTINGS_MODULE": "memoryhub.settings", "MEMORYHUB_VAR_DIR": str(tmp_path)}
    environ |= {"SECRET_KEY": "probe", **overrides}
    return subprocess.run(
        [sys.executable, "-c", probe], cwd=settings.BASE_DIR, env=environ, capture_output=True, text=True, timeout=60
    )


def test_settings_with_only_a_secret_key_use_sqlite_locmem_and_in_process_tasks(tmp_path):
    result = start_settings(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "django.db.backends.sqlite3",
        "django.core.cache.backends.locmem.LocMemCache",
        "True",
    ]


@pytest.mark.parametrize(
    "name, value",
    [
        ("DATABASE_URL", "mysql://h/db"),
        ("REDIS_URL", "http://h"),
        ("DEBUG", "maybe"),
        ("WORKING_SET_TTL_SECONDS", "0"),
        ("IDEMPOTENCY_KEY_RETENTION_HOURS", "12"),
        ("SEARCH_MIN_SCORE", "abc"),
        ("SEARCH_MIN_SCORE", "2"),  # above any cosine: the semantic signal would never count
        ("SEARCH_KEYWORD_WEIGHT", "nan"),  # float() took it, and every fused score became NaN
        ("SEARCH_KEYWORD_WEIGHT", "-1"),  # a keyword match would push a record down
        ("EMBEDDING_LOCAL_MODEL", "e5-bogus"),
        ("TOOL_TOKEN_DEFAULT_TTL_SECONDS", "0"),
        ("TOOL_TOKEN_DEFAULT_TTL_SECONDS", "86401"),  # longer than a tool token may live
    ],
)
def test_settings_refuse_to_start_on_a_malformed_variable(tmp_path, name, value):
    result = start_settings(tmp_path, **{name: value})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert name in result.stderr


# --- fault injection (memoryhub/faults.py) is for the test suite only ----------------------------------


@pytest.mark.parametrize(
    "overrides",
    [
        {"MEMORYHUB_FAULT_INJECTION": "1"},
        {"MEMORYHUB_FAULT_INJECTION": "1", "DATABASE_URL": "postgres://u@127.0.0.1:5432/memoryhub"},
        {"MEMORYHUB_CRASH_AFTER_COMMIT": "op-1"},
    ],
)
def test_settings_refuse_fault_injection_in_production(tmp_path, overrides):
    result = start_settings(tmp_path, **overrides)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "MEMORYHUB_FAULT_INJECTION" in result.stderr


@pytest.mark.parametrize(
    "overrides",
    [{"DEBUG": "1"}, {"DATABASE_URL": "postgres://u@127.0.0.1:5432/test_memoryhub"}],
)
def test_settings_allow_fault_injection_with_debug_or_on_a_test_database(tmp_path, overrides):
    result = start_settings(tmp_path, MEMORYHUB_FAULT_INJECTION="1", MEMORYHUB_CRASH_AFTER_COMMIT="op-1", **overrides)
    assert result.returncode == 0, result.stderr
