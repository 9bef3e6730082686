"""What every API view shares: JSON in, one error shape out, the schema generator,
pagination, and lookups that 404 on what the user cannot see."""

from __future__ import annotations

from django.core.exceptions import ObjectDoesNotExist, ValidationError
from django.db import DataError
from rest_framework import viewsets
from rest_framework.exceptions import NotFound
from rest_framework.pagination import BasePagination
from rest_framework.schemas.inspectors import ViewInspector
from rest_framework.views import APIView

from api.exceptions import exception_handler
from api.pagination import LimitOffsetPagination
from api.schema import FairwayAutoSchema


class ApiViewMixin:
    """JSON bodies only (REST_FRAMEWORK's DEFAULT_PARSER_CLASSES: api.parsers), the Fairway
    error shape, and the Fairway schema generator."""

    schema: ViewInspector | None = FairwayAutoSchema()

    def get_exception_handler(self):
        return exception_handler


class ApiView(ApiViewMixin, APIView):
    """A single-resource endpoint."""


class ApiViewSet(ApiViewMixin, viewsets.GenericViewSet):
    """A collection: paginated, filterable, with lookups restricted to what users see."""

    pagination_class: type[BasePagination] | None = LimitOffsetPagination
    noun = "resource"

    def get_object(self):
        """The object named in the URL among those the user may see, or a 404."""
        lookup_kwarg = self.lookup_url_kwarg or self.lookup_field
        value = self.kwargs[lookup_kwarg]
        try:
            obj = self.get_queryset().get(**{self.lookup_field: value})
        except (
            ObjectDoesNotExist,
            ValueError,
            TypeError,
            ValidationError,
            OverflowError,
            DataError,
        ):
            raise NotFound(f"no {self.noun} {value!r} that you can see") from None
        self.check_object_permissions(self.request, obj)
        return obj

    def page(self, queryset, serializer_class, **context):
        """One page of `queryset`, serialized, as a paginated response."""
        page = self.paginate_queryset(self.filter_queryset(queryset))
        data = serializer_class(page, many=True, context={"request": self.request, **context})
        return self.get_paginated_response(data.data)

    def input(self, serializer_class, *, partial: bool = False) -> dict:
        """The validated request body."""
        serializer = serializer_class(
            data=self.request.data, partial=partial, context={"request": self.request}
        )
        serializer.is_valid(raise_exception=True)
        return serializer.validated_data
