from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from memories.models import Scenario, ScenarioVersion
from memories.services.scenarios import (
    scenario_create,
    scenario_delete,
    scenario_get,
    scenario_to_dict,
    scenario_update,
)
from memoryhub.api.pagination import page_params
from memoryhub.pagination import keyset_page

from memoryhub.timefmt import iso
from .serializers.turns import ScenarioSerializer


def _out(scenario: Scenario) -> dict:
    fresh = scenario_get(product=scenario.product, slug=scenario.slug)
    return {**scenario_to_dict(fresh), "version": fresh.version, "createdAt": iso(fresh.created_at),
            "updatedAt": iso(fresh.updated_at)}


class ScenarioListView(APIView):
    @extend_schema(responses=ScenarioSerializer(many=True), operation_id="scenarios_list",
                   parameters=[OpenApiParameter("cursor", str), OpenApiParameter("limit", int)])
    def get(self, request):
        cursor, limit = page_params(request)
        rows, next_cursor = keyset_page(
            Scenario.objects.filter(product=request.user.product), field="id", descending=False, cursor=cursor, limit=limit
        )
        return Response({"results": [_out(s) for s in rows], "next": next_cursor})

    @extend_schema(request=ScenarioSerializer, responses={201: ScenarioSerializer}, operation_id="scenarios_create")
    def post(self, request):
        scenario = scenario_create(product=request.user.product, data=request.data, actor=request.user.actor)
        return Response(_out(scenario), status=201)


class ScenarioDetailView(APIView):
    @extend_schema(responses=ScenarioSerializer, operation_id="scenarios_get")
    def get(self, request, scenario_id: str):
        return Response(_out(scenario_get(product=request.user.product, slug=scenario_id)))

    @extend_schema(request=ScenarioSerializer, responses=ScenarioSerializer, operation_id="scenarios_replace")
    def put(self, request, scenario_id: str):
        return self._update(request, scenario_id, partial=False)

    @extend_schema(request=ScenarioSerializer, responses=ScenarioSerializer, operation_id="scenarios_patch")
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
        return Response(_out(scenario))


class ScenarioVersionListView(APIView):
    @extend_schema(operation_id="scenarios_versions", responses=dict,
                   parameters=[OpenApiParameter("cursor", str), OpenApiParameter("limit", int)])
    def get(self, request, scenario_id: str):
        scenario = scenario_get(product=request.user.product, slug=scenario_id)
        cursor, limit = page_params(request)
        rows, next_cursor = keyset_page(
            ScenarioVersion.objects.filter(scenario=scenario), field="version", descending=True, cursor=cursor, limit=limit
        )
        results = [{"version": v.version, "scenario": v.snapshot, "actor": v.actor, "createdAt": iso(v.created_at)} for v in rows]
        return Response({"results": results, "next": next_cursor})
