"""Personal API tokens."""

from __future__ import annotations

from django.urls import reverse

from scheduler_core.models import ApiToken
from scheduler_core.services.tokens import token_create


def test_creating_a_token_shows_the_key_once(client_for, cluster):
    client = client_for("researcher")
    response = client.post(reverse("console:tokens"), {"name": "laptop"})
    html = response.content.decode()
    token = ApiToken.objects.get(user=cluster["researcher"])
    key = html.split('id="new-token-key">', 1)[1].split("<", 1)[0]
    assert key.startswith(token.prefix)
    assert response["Cache-Control"] == "no-store"
    assert key not in client.get(reverse("console:tokens")).content.decode()
    response = client.get("/api/", HTTP_AUTHORIZATION=f"Token {key}")
    assert response.status_code != 401


def test_duplicate_name_is_explained(client_for, cluster):
    token_create(user=cluster["researcher"], name="laptop")
    html = (
        client_for("researcher")
        .post(reverse("console:tokens"), {"name": "laptop"})
        .content.decode()
    )
    assert "you already have a token named" in html


def test_revoke_own_token_but_not_someone_elses(client_for, cluster):
    mine, _ = token_create(user=cluster["researcher"], name="ci")
    theirs, _ = token_create(user=cluster["nlp_researcher"], name="ci")
    client = client_for("researcher")
    assert client.post(reverse("console:token_revoke", args=[theirs.pk])).status_code == 404
    assert client.post(reverse("console:token_revoke", args=[mine.pk])).status_code == 302
    assert list(ApiToken.objects.values_list("pk", flat=True)) == [theirs.pk]
