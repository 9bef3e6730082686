"""The Django admin lists and edits every model for superusers, and only for them."""

import pytest
from django.contrib import admin
from django.urls import reverse

from scheduler_core import models

pytestmark = pytest.mark.django_db

MODELS = [getattr(models, name) for name in models.__all__]


def test_every_model_is_registered():
    missing = [m.__name__ for m in MODELS if m not in admin.site._registry]
    assert missing == []


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_changelist_and_add_pages_load(client, cluster, model):
    client.force_login(cluster["admin"])
    opts = model._meta
    url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
    response = client.get(url, {"q": "a"})
    assert response.status_code == 200


def test_non_superuser_cannot_use_admin(client, cluster):
    client.force_login(cluster["dept_admin"])
    response = client.get(reverse("admin:scheduler_core_workload_changelist"))
    assert response.status_code == 302  # to the admin login
