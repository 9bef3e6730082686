"""Personal API tokens: create one (its key is shown once), revoke one."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from console.forms import TokenForm, attach_service_errors
from console.views.common import page
from scheduler_core.models import ApiToken
from scheduler_core.services.tokens import token_create, token_revoke


@login_required
def tokens(request):
    form = TokenForm(request.POST or None)
    raw_key = None
    created = None
    if request.method == "POST" and form.is_valid():
        try:
            created, raw_key = token_create(user=request.user, name=form.cleaned_data["name"])
        except ValidationError as exc:
            attach_service_errors(form, exc)
        else:
            form = TokenForm()
    response = page(
        request,
        "console/tokens.html",
        "tokens",
        {
            "form": form,
            "tokens": ApiToken.objects.filter(user=request.user).order_by("-created_at"),
            "raw_key": raw_key,
            "created": created,
        },
    )
    if raw_key:
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def token_revoke_view(request, pk: int):
    token = get_object_or_404(ApiToken, pk=pk, user=request.user)
    token_revoke(user=request.user, token=token)
    messages.success(request, f"Token {token.name} is revoked; scripts using it stop working.")
    return redirect("console:tokens")
