"""Django's LocaleMiddleware for the pages people read — the admin and console (/admin/) and the language
switcher (/i18n/) — and nowhere else: the API's error messages stay in the documented English whatever a
client's Accept-Language says (docs/contract.md)."""

from __future__ import annotations

from django.conf import settings
from django.middleware.locale import LocaleMiddleware
from django.utils import translation

LOCALIZED_PREFIXES = ("/admin/", "/i18n/")


class ConsoleLocaleMiddleware(LocaleMiddleware):
    def process_request(self, request):
        if request.path_info.startswith(LOCALIZED_PREFIXES):
            super().process_request(request)
        else:  # a thread's previous admin request must not leave its language active here
            translation.activate(settings.LANGUAGE_CODE)

    def process_response(self, request, response):
        if request.path_info.startswith(LOCALIZED_PREFIXES):
            return super().process_response(request, response)
        return response
