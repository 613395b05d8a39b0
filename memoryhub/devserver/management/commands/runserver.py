"""Django's (and staticfiles') runserver, with the request line's raw path in the environ as RAW_URI, as gunicorn
passes it: the encoded-slash check (memoryhub/api/raw_path.py) then works on the embedded default too."""

from __future__ import annotations

from django.contrib.staticfiles.management.commands.runserver import Command as StaticFilesRunserver
from django.core.servers.basehttp import WSGIRequestHandler, WSGIServer


class RawUriRequestHandler(WSGIRequestHandler):
    def get_environ(self):
        environ = super().get_environ()
        environ["RAW_URI"] = self.path  # the request target as sent, before wsgiref decodes it into PATH_INFO
        return environ


class RawUriWSGIServer(WSGIServer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.RequestHandlerClass = RawUriRequestHandler  # django's run() passes its own handler class


class Command(StaticFilesRunserver):
    server_cls = RawUriWSGIServer
