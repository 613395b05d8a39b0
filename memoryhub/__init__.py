# Imported here so that `.delay()` in the web process uses our configured app, not Celery's default AMQP one.
from .celery import app as celery_app

__all__ = ("celery_app",)
