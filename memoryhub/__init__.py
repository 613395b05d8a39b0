# Imported here so that `.delay()` in the web process uses our configured app, not Celery's default AMQP one.
from .celery import app as celery_app

# The service's one version: the landing page and the OpenAPI document show it.
__version__ = "1.0.0"

__all__ = ("__version__", "celery_app")
