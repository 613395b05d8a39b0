"""OpenAPI descriptions of our authentication and strict fields (drf-spectacular extensions)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import build_basic_type, build_bearer_security_scheme_object
from drf_spectacular.types import OpenApiTypes


class ProductKeyScheme(OpenApiAuthenticationExtension):
    target_class = "memories.api.authentication.ProductKeyAuthentication"
    name = "productKey"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Bearer")


class ToolTokenScheme(OpenApiAuthenticationExtension):
    target_class = "memories.api.authentication.ToolTokenAuthentication"
    name = "toolToken"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(header_name="Authorization", token_prefix="Bearer")


class StrictIntegerFieldSchema(OpenApiSerializerFieldExtension):
    target_class = "memoryhub.api.fields.StrictIntegerField"

    def map_serializer_field(self, auto_schema, direction):
        schema = build_basic_type(OpenApiTypes.INT)
        schema.update({"minimum": self.target.min_value, "maximum": self.target.max_value})
        return schema
