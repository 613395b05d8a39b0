"""The base of views that plan their requests (memoryhub/api/plan.py): the plan is made and attached here only."""

from __future__ import annotations

import logging
from typing import Any, ClassVar

from rest_framework.exceptions import AuthenticationFailed
from rest_framework.views import APIView

from .authentication import KeyAuthentication
from .plan import NO_PLANNER, EdgePlan, PlannedRequest, Planner, make_plan, plan_input

logger = logging.getLogger(__name__)


class PlannedView(APIView):
    """An APIView whose requests carry an `EdgePlan`, made by its `planner` before the rate limit.

    `initial` runs DRF's steps in DRF's order with one more: after authentication and permissions, the plan is
    made from the validated input and attached to the request; a body that cannot be read is refused before
    the rate limiter counts the request (invalid input is refused by the view after it). A refusal answered
    to a key taken from its snapshot is answered only once the key is confirmed (`handle_exception`).
    """

    planner: ClassVar[Planner] = NO_PLANNER

    def initialize_request(self, request, *args, **kwargs) -> PlannedRequest:
        checked = request.method in self.planner.key_checked_by_write
        return PlannedRequest(
            request,
            parsers=self.get_parsers(),
            authenticators=[
                cls(key_checked_by_write=checked) if issubclass(cls, KeyAuthentication) else cls()
                for cls in self.authentication_classes
            ],
            negotiator=self.get_content_negotiator(),
            parser_context=self.get_parser_context(request),
        )

    def initial(self, request, *args, **kwargs) -> None:
        self.format_kwarg = self.get_format_suffix(**kwargs)
        request.accepted_renderer, request.accepted_media_type = self.perform_content_negotiation(request)
        request.version, request.versioning_scheme = self.determine_version(request, *args, **kwargs)
        self.perform_authentication(request)
        self.check_permissions(request)
        request.plan = plan = make_plan(self.planner, request, kwargs)
        if plan.refused_before_counting:
            plan.validated()  # raises the refusal
        self.check_throttles(request)  # memoryhub/api/throttling.py: the plan's cache work rides in its round trip

    def plan(self, request) -> EdgePlan[Any]:
        """This request's plan (made in `initial`, before the handler runs)."""
        plan = request.plan if isinstance(request, PlannedRequest) else None
        if plan is None:
            raise RuntimeError("the request has no plan: PlannedView.initial did not run")
        return plan

    def confirm_key(self, request) -> bool:
        """Confirm a key taken from its snapshot (`EdgePlan.confirm_key`); if it or its product changed, plan the
        input again for the key as it is now (the round trip is spent: no cache work). True if it changed."""
        plan = self.plan(request)
        changed = plan.confirm_key(request)
        if changed:
            plan_input(plan, self.planner, request, self.kwargs, cache_work=False)
        return changed

    def handle_exception(self, exc: Exception):
        plan = self.request.plan if isinstance(self.request, PlannedRequest) else None
        if plan is not None and plan.client is not None and plan.client.confirm is not None:
            exc = self._confirmed(exc)
        return super().handle_exception(exc)

    def _confirmed(self, exc: Exception) -> Exception:
        """A revoked key learns nothing but 401, whatever its request would have been answered."""
        try:
            self.confirm_key(self.request)
        except AuthenticationFailed as gone:
            return gone
        except Exception:  # the key cannot be looked up either (the database is down): the refusal stands
            logger.warning("could not confirm an API key for a refused request", exc_info=True)
        return exc
