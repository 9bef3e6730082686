"""Cluster totals for dashboards."""

from __future__ import annotations

from rest_framework import serializers


class PoolSummarySerializer(serializers.Serializer):
    """GPU totals of one pool."""

    id = serializers.IntegerField(help_text="Pool id.")
    name = serializers.CharField(help_text="Pool name.")
    policy = serializers.CharField(help_text="The pool's policy.")
    nodes = serializers.IntegerField(help_text="Nodes in the pool.")
    nodes_ready = serializers.IntegerField(help_text="Nodes taking new pods.")
    gpus_total = serializers.IntegerField(help_text="GPUs on all nodes.")
    gpus_allocated = serializers.FloatField(help_text="GPUs held by pods.")
    gpus_free = serializers.FloatField(help_text="GPUs not held by pods.")
    utilisation = serializers.FloatField(help_text="Allocated / total, 0..1.")
    running = serializers.IntegerField(help_text="Running workloads with pods here.")
    pending = serializers.IntegerField(help_text="Pending workloads.")


class OverviewSerializer(serializers.Serializer):
    """Totals for the whole cluster and per pool."""

    gpus_total = serializers.IntegerField(help_text="GPUs in the cluster.")
    gpus_allocated = serializers.FloatField(help_text="GPUs held by pods.")
    nodes = serializers.IntegerField(help_text="Nodes in the cluster.")
    departments = serializers.IntegerField(help_text="Departments.")
    projects = serializers.IntegerField(help_text="Projects.")
    running = serializers.IntegerField(help_text="Running workloads.")
    pending = serializers.IntegerField(help_text="Pending workloads.")
    workloads = serializers.DictField(
        child=serializers.IntegerField(), help_text="Workloads per status."
    )
    pools = PoolSummarySerializer(many=True, help_text="Totals per pool.")
