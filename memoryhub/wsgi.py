"""WSGI entry point."""

import os

from django.core.wsgi import get_wsgi_application

from memoryhub.unread_body import DrainUnreadBody

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
application = DrainUnreadBody(get_wsgi_application())

from memoryhub import embedded_beat  # noqa: E402  (after Django's set-up)

embedded_beat.start()  # only under `dev.py serve` without a broker (memoryhub/embedded_beat.py)
