"""The OpenAPI document and its Swagger page, with errors in the JSON envelope like every other endpoint.

drf-spectacular renders these views' answers as YAML or HTML, and so their 405 and 406 as well: an error
envelope in YAML, or a bare "405 Method Not Allowed" page. An error is rendered as JSON instead.
"""

from __future__ import annotations

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response

from memoryhub.api.negotiation import JSONFirstContentNegotiation


class _JSONErrors:
    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)  # type: ignore[misc]
        if isinstance(response, Response) and response.status_code >= 400:
            response.accepted_renderer = JSONRenderer()
            response.accepted_media_type = JSONRenderer.media_type
        return response


class SchemaFormatNegotiation(JSONFirstContentNegotiation):
    """`?format=json` or `yaml` picks the OpenAPI document's rendering (the API's views ignore `format`)."""

    class settings:
        URL_FORMAT_OVERRIDE = "format"


class SchemaView(_JSONErrors, SpectacularAPIView):
    authentication_classes: list = []
    permission_classes: list = []
    content_negotiation_class = SchemaFormatNegotiation


class SwaggerView(_JSONErrors, SpectacularSwaggerView):
    authentication_classes: list = []
    permission_classes: list = []
    url_name = "schema"
