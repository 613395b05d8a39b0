"""WSGI entry point."""

import os

from django.core.wsgi import get_wsgi_application

from memoryhub.unread_body import DrainUnreadBody

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
application = DrainUnreadBody(get_wsgi_application())
