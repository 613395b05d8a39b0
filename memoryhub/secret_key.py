"""Where SECRET_KEY comes from when the environment does not set it (settings.py, manage.py, dev.py serve).

Every process that verifies what another one signed — gunicorn's workers, a Celery worker, a second machine —
must share one SECRET_KEY: with a random key per process, a tool token, an MCP session or an admin login
minted by one worker is refused by the next (12 of 20 tool calls answered 401 under `--workers 2`). So a random
key is given only to processes whose signatures need not outlive them, and any other process refuses to start.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping, Sequence

from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

# Set by manage.py for a one-off command that signs nothing another process must verify.
ONE_OFF_MARKER = "MEMORYHUB_ONE_OFF_COMMAND"
# manage.py commands that are servers or sign something that outlives them (erasure receipts are keyed with it).
KEYED_COMMANDS = frozenset({"runserver", "erase_user", "shell"})

MISSING = (
    "SECRET_KEY is not set. Every web worker, Celery worker and machine must share one key: set SECRET_KEY "
    "(e.g. python3 -c 'import secrets; print(secrets.token_urlsafe(50))'), or run `python3 dev.py serve`, "
    "which keeps one in var/secret-key (docs/production.md#secret_key)."
)


def mark_one_off_command(argv: Sequence[str], environ: MutableMapping[str, str] = os.environ) -> None:
    """manage.py: a command that is not a server and signs nothing lasting may run without SECRET_KEY."""
    if len(argv) < 2 or argv[1] not in KEYED_COMMANDS:
        environ.setdefault(ONE_OFF_MARKER, "1")


def fallback_secret_key(*, debug: bool, environ: Mapping[str, str] = os.environ) -> str:
    """A random key for DEBUG, the test runner, mypy's django plugin or a one-off command; else ImproperlyConfigured.

    The test runner's servers and workers get its key through the environment (tests/conftest.py).
    """
    if debug or environ.get(ONE_OFF_MARKER) == "1" or {"pytest", "mypy"} & sys.modules.keys():
        return get_random_secret_key()
    raise ImproperlyConfigured(MISSING)
