"""The views an operator mounts for machines: `metrics` (Prometheus; a staff session or the
bearer token `HAMMERWEB["METRICS_TOKEN"]`, else 401 or 403) and `healthz` (open to a load
balancer; says only whether the database answers). The paths to add are in
docs/design/dashboard.md."""

from __future__ import annotations

from django.http import HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from queues.ops.health import database_problem
from queues.ops.metrics import queue_registry, token_allows


@never_cache
@require_GET
def metrics(request):
    if not token_allows(request.headers.get("authorization")):
        user = request.user
        if not user.is_authenticated or "authorization" in request.headers:
            response = HttpResponse("Credentials needed.\n", status=401, content_type="text/plain")
            response["WWW-Authenticate"] = 'Bearer realm="hammerweb metrics"'
            return response
        if not (user.is_active and user.is_staff):
            return HttpResponse("Staff only.\n", status=403, content_type="text/plain")
    return HttpResponse(generate_latest(queue_registry()), content_type=CONTENT_TYPE_LATEST)


@never_cache
@require_GET
def healthz(request):
    problem = database_problem()
    if problem:
        return HttpResponse(problem + "\n", status=503, content_type="text/plain")
    return HttpResponse("ok\n", content_type="text/plain")
