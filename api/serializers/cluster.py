"""Node pools (policy and scheduling settings) and nodes."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.fields import (
    LabelMapField,
    NameRelatedField,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    StrictSlugField,
    schema_field,
)
from api.serializers.agents import DeviceSerializer, GpuSampleSerializer
from api.serializers.base import StrictInputSerializer
from scheduler_core.choices import Backend, FairshareMode, NodeState, Placement, Policy
from scheduler_core.engine.profiles import PROFILES
from scheduler_core.models import NodePool
from scheduler_core.schemas.pools import PoolSettings


def _setting(name: str, help_text: str, **kwargs) -> serializers.Field:
    return schema_field(PoolSettings, name, help_text=help_text, **kwargs)


class PoolSettingsSerializer(StrictInputSerializer):
    """A pool's policy and scheduling settings; omitted fields keep their value. The values
    are checked by the pools' schema (scheduler_core.schemas.pools), in pool_create and
    pool_update."""

    description = _setting("description", "Free text.")
    profile = _setting(
        "profile",
        "A policy profile: sets every setting it names at once. lab (a new pool's default): "
        "moves and reclaims weigh the work they throw away, over-quota by quota, draining "
        "nodes held for gangs, for work beyond quota only cheap moves of borrowed pods, at "
        "most 2 evictions per workload, preemption loops held; kai: exactly KAI-Scheduler's. "
        "Settings given beside it win.",
        choices=[(p, p) for p in PROFILES],
    )
    policy = _setting(
        "policy",
        "How GPUs are divided: quota (deserved quota + fair over-quota), fairshare (weights "
        "only) or priority (strict priority order).",
        choices=Policy.choices,
    )
    placement = _setting(
        "placement",
        "binpack fills nodes to keep whole nodes free; spread balances load.",
        choices=Placement.choices,
    )
    preemption = _setting("preemption", "Whether workloads may be evicted to serve others.")
    consolidation = _setting(
        "consolidation", "Whether running pods may be moved to make room for a waiting gang."
    )
    max_consolidation_evaluations = _setting(
        "max_consolidation_evaluations",
        "Upper bound on the moves a cycle evaluates when consolidating.",
    )
    consolidation_weighs_lost_work = _setting(
        "consolidation_weighs_lost_work",
        "Move pods only while the work a move throws away is no more than the GPU-time the "
        "waiting job has waited (off: KAI's behaviour).",
    )
    consolidation_within_quota = _setting(
        "consolidation_within_quota",
        "Move running pods for a workload beyond its project's or department's deserved quota "
        "only when they run beyond their own project's quota too and the move throws away at "
        "most 1/30 of the GPU-time it has waited (off: KAI's behaviour).",
    )
    reserve_for_gangs = _setting(
        "reserve_for_gangs",
        "Hold the nodes likeliest to drain for a queue's first workload that does not fit for "
        "fragmentation; other pods stay off them until it starts (off: KAI's behaviour).",
    )
    reclaim_weighs_lost_work = _setting(
        "reclaim_weighs_lost_work",
        "Reclaim from other queues only while the work it throws away is no more than the "
        "GPU-time the reclaiming queue's workloads have waited (off: KAI's behaviour).",
    )
    max_reclaims_per_cycle = _setting(
        "max_reclaims_per_cycle",
        "Reclaims one cycle may make in the pool (the next cycle goes on); null = no bound.",
    )
    max_preemptions_per_cycle = _setting(
        "max_preemptions_per_cycle",
        "Priority preemptions one cycle may make in the pool; null = no bound.",
    )
    min_guaranteed_runtime = _setting(
        "min_guaranteed_runtime", "Seconds a started preemptible workload is safe from eviction."
    )
    max_preemptions_per_workload = _setting(
        "max_preemptions_per_workload",
        "A workload reclaimed or preempted this many times is not evicted or moved again: it "
        "runs to its end; null = no bound (KAI's behaviour).",
    )
    reclaim_lost_work_ratio = _setting(
        "reclaim_lost_work_ratio",
        "Where reclaims weigh lost work: the share of its waited GPU-time a queue may throw "
        "away to reclaim (1: as much as it waited; 0.5: half).",
    )
    preemption_loop_evictions = _setting(
        "preemption_loop_evictions",
        "A workload evicted this many times in a row, each within an hour of starting, is "
        "held pending for an hour (a preemption loop); null = never held (KAI's behaviour).",
    )
    over_quota_weight_from_quota = _setting(
        "over_quota_weight_from_quota", "Use each queue's deserved quota as its over-quota weight."
    )
    fairshare_mode = _setting(
        "fairshare_mode",
        "point_in_time, or time_based (over-quota shares shrink with past usage).",
        choices=FairshareMode.choices,
    )
    time_based_window = _setting(
        "time_based_window", "Seconds of usage history time-based fairshare looks at."
    )
    time_based_half_life = _setting(
        "time_based_half_life", "Seconds after which past usage counts half."
    )
    time_based_k = _setting(
        "time_based_k",
        "How strongly past usage reduces a queue's over-quota share (0 = not at all).",
    )
    backend = _setting(
        "backend",
        "What runs the pool's pods: simulated (runs end after their duration) or agent "
        "(real processes started by node agents).",
        choices=Backend.choices,
    )
    grace_period = _setting(
        "grace_period", "Seconds between SIGTERM and SIGKILL when a pod is stopped (agent pools)."
    )


class PoolCreateSerializer(PoolSettingsSerializer):
    """A new node pool (system admins)."""

    name = StrictSlugField(
        max_length=63, help_text="Unique name: lowercase letters, digits and dashes."
    )


class PoolSerializer(serializers.Serializer):
    """A node pool with its scheduling settings and capacity."""

    id = serializers.IntegerField(help_text="Database id.")
    name = serializers.CharField(help_text="Unique name; used in URLs (/pools/<name>/).")
    description = serializers.CharField(help_text="Free text.")
    profile = serializers.CharField(
        help_text="The policy profile whose settings the pool holds (lab or kai), or custom."
    )
    policy = serializers.ChoiceField(choices=Policy.choices, help_text="How GPUs are divided.")
    placement = serializers.ChoiceField(
        choices=Placement.choices, help_text="Where pods go inside the pool."
    )
    preemption = serializers.BooleanField(help_text="Whether workloads may be evicted.")
    consolidation = serializers.BooleanField(
        help_text="Whether running pods may be moved to make room for a gang."
    )
    max_consolidation_evaluations = serializers.IntegerField(
        help_text="Upper bound on moves evaluated per cycle."
    )
    consolidation_weighs_lost_work = serializers.BooleanField(
        help_text="A move is made only while it throws away no more than the job has waited."
    )
    consolidation_within_quota = serializers.BooleanField(
        help_text="For work beyond its quotas, only borrowed pods are moved, and cheaply."
    )
    reserve_for_gangs = serializers.BooleanField(
        help_text="Nodes are held for a queue's first workload that does not fit for fragmentation."
    )
    reclaim_weighs_lost_work = serializers.BooleanField(
        help_text="A reclaim is made only while it throws away no more than the queue has waited."
    )
    max_reclaims_per_cycle = serializers.IntegerField(
        allow_null=True, help_text="Reclaims one cycle may make in the pool; null = no bound."
    )
    max_preemptions_per_cycle = serializers.IntegerField(
        allow_null=True,
        help_text="Priority preemptions one cycle may make in the pool; null = no bound.",
    )
    min_guaranteed_runtime = serializers.IntegerField(
        help_text="Seconds a started preemptible workload is safe from eviction."
    )
    max_preemptions_per_workload = serializers.IntegerField(
        allow_null=True,
        help_text="Evictions after which a workload runs to its end; null = no bound.",
    )
    reclaim_lost_work_ratio = serializers.FloatField(
        help_text="Share of its waited GPU-time a queue may throw away to reclaim."
    )
    preemption_loop_evictions = serializers.IntegerField(
        allow_null=True,
        help_text="Quick evictions in a row after which a workload is held for an hour; "
        "null = never held.",
    )
    over_quota_weight_from_quota = serializers.BooleanField(
        help_text="Each queue's quota is its over-quota weight."
    )
    fairshare_mode = serializers.ChoiceField(
        choices=FairshareMode.choices, help_text="Whether over-quota shares use usage history."
    )
    time_based_window = serializers.IntegerField(help_text="Seconds of usage history.")
    time_based_half_life = serializers.IntegerField(
        help_text="Seconds after which past usage counts half."
    )
    time_based_k = serializers.FloatField(help_text="Strength of the usage penalty.")
    backend = serializers.ChoiceField(
        choices=Backend.choices, help_text="What runs the pool's pods: simulated or agent."
    )
    grace_period = serializers.IntegerField(
        help_text="Seconds between SIGTERM and SIGKILL when a pod is stopped."
    )
    created_at = serializers.DateTimeField(help_text="When it was created.")
    node_count = serializers.IntegerField(help_text="Nodes in the pool.")
    gpu_count = serializers.IntegerField(help_text="GPUs on all its nodes.")


class NodePodSerializer(serializers.Serializer):
    """A pod running on a node."""

    workload_id = serializers.IntegerField(help_text="Id of the workload the pod belongs to.")
    workload = serializers.CharField(source="workload.name", help_text="Workload name.")
    project = serializers.CharField(source="workload.project.name", help_text="Its project.")
    group = serializers.CharField(help_text="Pod group within the workload.")
    pod_index = serializers.IntegerField(help_text="Index of the pod within its group.")
    gpu_devices = serializers.ListField(
        child=serializers.IntegerField(), help_text="GPU device indices on the node."
    )
    gpu_fraction = serializers.FloatField(
        help_text="Share of each device (1 = whole GPUs; below 1 = a shared device)."
    )


MAX_NODE_PODS = 100
"""Pods a node shows inline; the rest are found through its workloads
(GET /workloads/?node=<name>), which are paginated."""


class NodeSerializer(serializers.Serializer):
    """A machine with GPUs in a pool, and what runs on it."""

    id = serializers.IntegerField(help_text="Database id.")
    name = serializers.CharField(help_text="Unique name; used in URLs (/nodes/<name>/).")
    pool = serializers.CharField(source="pool.name", help_text="Name of its pool.")
    pool_id = serializers.IntegerField(help_text="Id of its pool.")
    gpu_count = serializers.IntegerField(help_text="GPU devices.")
    gpu_model = serializers.CharField(help_text="GPU model, e.g. A100-80GB.")
    cpu = serializers.FloatField(help_text="CPU cores.")
    memory = serializers.FloatField(help_text="Memory in GiB.")
    labels = serializers.DictField(
        child=serializers.CharField(), help_text="Labels that node selectors match."
    )
    state = serializers.ChoiceField(
        choices=NodeState.choices,
        help_text="ready takes pods; cordoned keeps its pods but takes no new ones; "
        "down has lost its pods.",
    )
    last_heartbeat = serializers.DateTimeField(
        allow_null=True, help_text="When the node last reported."
    )
    version = serializers.IntegerField(help_text="Bumped on every state change.")
    created_at = serializers.DateTimeField(help_text="When it was added.")
    address = serializers.CharField(help_text="Where its pods reach each other (agent nodes).")
    devices = DeviceSerializer(many=True, help_text="GPUs its agent found (agent nodes).")
    agent_version = serializers.CharField(help_text="Version of its agent (agent nodes).")
    gpus = serializers.SerializerMethodField(
        help_text="Each GPU's latest utilisation and memory, as its agent measured them."
    )
    gpus_in_use = serializers.SerializerMethodField(
        help_text="GPUs held by pods (a shared device counts its fractions)."
    )
    pods = serializers.SerializerMethodField(
        help_text=f"Pods on the node, of the workloads you can see: the first {MAX_NODE_PODS} "
        "(pod_count says how many there are; workloads_url lists their workloads)."
    )
    pod_count = serializers.SerializerMethodField(
        help_text="Pods on the node, of the workloads you can see."
    )
    workloads_url = serializers.SerializerMethodField(
        help_text="The workloads with a pod on the node (paginated)."
    )

    @extend_schema_field(GpuSampleSerializer(many=True))
    def get_gpus(self, node) -> list[dict]:
        samples = self.context.get("gpu_samples", {}).get(node.pk, [])
        return serializers.ListSerializer(samples, child=GpuSampleSerializer()).data

    @extend_schema_field(OpenApiTypes.DOUBLE)
    def get_gpus_in_use(self, node) -> float:
        return round(
            sum(len(a.gpu_devices or []) * a.gpu_fraction for a in node.prefetched_allocations), 3
        )

    def _visible_pods(self, node) -> list:
        visible = self.context.get("visible_project_ids")
        return [
            a
            for a in node.prefetched_allocations
            if visible is None or a.workload.project_id in visible
        ]

    @extend_schema_field(NodePodSerializer(many=True))
    def get_pods(self, node) -> list[dict]:
        shown = self._visible_pods(node)[:MAX_NODE_PODS]
        return serializers.ListSerializer(shown, child=NodePodSerializer()).data

    def get_pod_count(self, node) -> int:
        return len(self._visible_pods(node))

    def get_workloads_url(self, node) -> str:
        return f"{reverse('api:workload-list')}?{urlencode({'node': node.name})}"


class NodeCreateSerializer(StrictInputSerializer):
    """A new node in a pool (system admins)."""

    pool = NameRelatedField(
        noun="pool", queryset=NodePool.objects.all(), help_text="Name of the pool it joins."
    )
    name = StrictSlugField(
        max_length=63, help_text="Unique name: lowercase letters, digits and dashes."
    )
    gpu_count = StrictIntegerField(
        max_value=1024, required=False, default=0, help_text="GPU devices (default 0)."
    )
    gpu_model = StrictCharField(
        max_length=64, allow_blank=True, required=False, default="", help_text="GPU model."
    )
    cpu = StrictFloatField(
        max_value=1_000_000, required=False, default=0, help_text="CPU cores (default 0)."
    )
    memory = StrictFloatField(
        max_value=1e9, required=False, default=0, help_text="Memory in GiB (default 0)."
    )
    labels = LabelMapField(
        required=False, default=dict, help_text="Labels that node selectors match."
    )
