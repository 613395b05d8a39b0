from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.models import Scenario, ScenarioVersion
from memories.selectors.scenarios import scenario_get, scenario_versions_page, scenarios_page
from memories.services.scenarios import scenario_create, scenario_delete, scenario_to_dict, scenario_update
from memoryhub.api.pagination import page_params
from memoryhub.timefmt import iso

from .serializers.responses import ScenarioOutSerializer, ScenarioPageSerializer, ScenarioVersionPageSerializer
from .serializers.turns import ScenarioSerializer


def _out(scenario: Scenario) -> dict:
    return {
        **scenario_to_dict(scenario),
        "version": scenario.version,
        "createdAt": iso(scenario.created_at),
        "updatedAt": iso(scenario.updated_at),
    }


def _fresh(scenario: Scenario) -> dict:
    # A write's instance may hold a sources cache from before the write: shape the stored state.
    return _out(scenario_get(product=scenario.product, slug=scenario.slug))


def _version_out(version: ScenarioVersion) -> dict:
    return {
        "version": version.version,
        "scenario": version.snapshot,
        "actor": version.actor,
        "createdAt": iso(version.created_at),
    }


class ScenarioListView(APIView):
    @extend_schema(
        responses=ScenarioPageSerializer,
        operation_id="scenarios_list",
        parameters=[OpenApiParameter("cursor", str), OpenApiParameter("limit", int)],
    )
    def get(self, request):
        cursor, limit = page_params(request)
        rows, next_cursor = scenarios_page(product=request.user.product, cursor=cursor, limit=limit)
        return Response({"results": [_out(s) for s in rows], "next": next_cursor})

    @extend_schema(request=ScenarioSerializer, responses={201: ScenarioOutSerializer}, operation_id="scenarios_create")
    def post(self, request):
        scenario = scenario_create(product=request.user.product, data=request.data, actor=request.user.actor)
        return Response(_fresh(scenario), status=201)


class ScenarioDetailView(APIView):
    @extend_schema(responses=ScenarioOutSerializer, operation_id="scenarios_get")
    def get(self, request, scenario_id: str):
        return Response(_out(scenario_get(product=request.user.product, slug=scenario_id)))

    @extend_schema(request=ScenarioSerializer, responses=ScenarioOutSerializer, operation_id="scenarios_replace")
    def put(self, request, scenario_id: str):
        return self._update(request, scenario_id, partial=False)

    @extend_schema(request=ScenarioSerializer, responses=ScenarioOutSerializer, operation_id="scenarios_patch")
    def patch(self, request, scenario_id: str):
        return self._update(request, scenario_id, partial=True)

    @extend_schema(responses={204: None}, operation_id="scenarios_delete")
    def delete(self, request, scenario_id: str):
        scenario_delete(product=request.user.product, slug=scenario_id)
        return Response(status=204)

    def _update(self, request, scenario_id: str, *, partial: bool):
        scenario = scenario_update(
            product=request.user.product, slug=scenario_id, data=request.data, actor=request.user.actor, partial=partial
        )
        return Response(_fresh(scenario))


class ScenarioVersionListView(APIView):
    @extend_schema(
        operation_id="scenarios_versions",
        responses=ScenarioVersionPageSerializer,
        parameters=[OpenApiParameter("cursor", str), OpenApiParameter("limit", int)],
    )
    def get(self, request, scenario_id: str):
        cursor, limit = page_params(request)
        rows, next_cursor = scenario_versions_page(
            product=request.user.product, slug=scenario_id, cursor=cursor, limit=limit
        )
        return Response({"results": [_version_out(v) for v in rows], "next": next_cursor})
