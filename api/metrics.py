"""Prometheus metrics endpoint (placeholder until the live scheduler issue lands)."""

from django.http import HttpResponse


def metrics_view(request):
    return HttpResponse("", content_type="text/plain; version=0.0.4")
