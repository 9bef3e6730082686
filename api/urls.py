"""API routes under /api/ (placeholder until the API issue lands)."""

urlpatterns: list = []
