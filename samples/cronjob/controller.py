"""A CronJob controller in the shape of kubebuilder's tutorial (``cronjob_controller.go``), on pyinformers.

For every ``CronJob`` (``batch.tutorial.kubebuilder.io/v1``) the controller
runs ``spec.jobTemplate`` as a batch/v1 Job at each scheduled time, keeps
``status.active`` (references to the running Jobs), ``status.lastScheduleTime``
and a ``Ready`` condition, deletes finished Jobs beyond the history limits,
and honours ``suspend``, ``startingDeadlineSeconds`` and
``concurrencyPolicy`` (Allow, Forbid, Replace).

What it is for: the porting guide's worked example of the controller-runtime
helpers (``docs/porting.rst``). Each Go helper the tutorial calls has its
pyinformers form here:

=======================================  ==================================================
Go (kubebuilder tutorial)                here
=======================================  ==================================================
``r.List(..., MatchingFields{owner})``   ``self.jobs.namespace(ns).by_index(JOB_OWNER, name)``
``mgr.GetFieldIndexer().IndexField``     ``jobs.add_indexers({JOB_OWNER: owner_name})``
``ref.GetReference(scheme, job)``        ``meta.object_reference(job)``
``time.Parse(time.RFC3339, s)``          ``meta.parse_time(s)``
``metav1.NewTime(t)`` in status          ``meta.format_time(t)``
``meta.SetStatusCondition``              ``meta.set_status_condition(cron, type=..., ...)``
``r.Status().Update(ctx, &cronJob)``     ``update_status(client, cron)`` (hands back the stored object)
``client.IgnoreNotFound(err)``           ``with meta.ignore_not_found(): ...``
``ctrl.SetControllerReference``          ``meta.set_controller_reference(cron, job)``
``r.Now()`` (an injected ``Clock``)      ``self.now()`` (``Controller(wall_clock=...)``)
``Owns(&kbatch.Job{})``                  ``self.watch(jobs, EnqueueForOwner("CronJob", ...))``
=======================================  ==================================================

The schedule is ``@every <n>s|m|h`` (robfig/cron's interval form): runs fall
at the CronJob's creation time plus whole intervals, so the next and the
missed runs are arithmetic instead of a cron-expression parser; a schedule
in any other form is a :class:`~pyinformers.controller.TerminalError` (no
retry can fix the spec).

Threading: ``reconcile`` runs on the worker threads; it reads the caches and
writes through thread-safe clients.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pyinformers.api import Resource, meta
from pyinformers.controller import Controller, EnqueueForOwner, Result, TerminalError, update_status
from pyinformers.resources import JOBS

__all__ = ["ARTIFACTS", "CRONJOBS", "CronJobController", "JOB_OWNER", "SCHEDULED_AT", "parse_every"]

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
CRONJOBS = Resource("batch.tutorial.kubebuilder.io", "v1", "cronjobs", "CronJob")
#: The annotation a Job carries with the time it was scheduled for.
SCHEDULED_AT = "batch.tutorial.kubebuilder.io/scheduled-at"
#: The Job index by controlling CronJob name (the tutorial's ``.metadata.controller``).
JOB_OWNER = "owner"

_EVERY = re.compile(r"^@every (\d+)([smh])$")


def parse_every(schedule: str) -> timedelta:
    """``@every 90s`` -> 90 seconds; TerminalError for anything else."""
    match = _EVERY.match(schedule or "")
    if match is None or int(match.group(1)) == 0:
        raise TerminalError(
            f"unsupported schedule {schedule!r}: use '@every <n>s', '@every <n>m' or '@every <n>h'"
        )
    return timedelta(seconds=int(match.group(1)) * {"s": 1, "m": 60, "h": 3600}[match.group(2)])


def owner_name(job: Mapping[str, Any]) -> list[str]:
    """The index function: the name of the CronJob controlling ``job``."""
    ref = meta.controller_of(job)
    return [ref["name"]] if ref and ref.get("kind") == "CronJob" else []


def _finished(job: Mapping[str, Any]) -> str | None:
    for kind in ("Complete", "Failed"):
        if meta.is_status_condition_true(job, kind):
            return kind
    return None


class CronJobController(Controller):
    """Runs each CronJob's Jobs on schedule (see the module docstring)."""

    name = "cronjob"

    def __init__(self, factory: Any, **options: Any) -> None:
        super().__init__(**options)
        self.cronjobs = factory.lister(CRONJOBS)
        self.cronjobs_client = factory.client(CRONJOBS, verbs=(), status_verbs=("update",))
        self.jobs_client = factory.client(JOBS, verbs=("create", "delete"))
        jobs = factory.informer(JOBS)
        jobs.add_indexers({JOB_OWNER: owner_name})
        self.jobs = jobs.lister
        self.watch(factory.informer(CRONJOBS))
        self.watch(jobs, EnqueueForOwner(CRONJOBS.kind, owner_group=CRONJOBS.group))

    def reconcile(self, key: str) -> Result | None:
        ns, name = meta.split_key(key)
        cached = self.cronjobs.namespace(ns).get(name)
        if cached is None:
            return None
        cron = meta.deep_copy(cached)
        spec = cron["spec"]
        every = parse_every(spec["schedule"])
        now = self.now()

        active, successful, failed, last = [], [], [], None
        for job in self.jobs.namespace(ns).by_index(JOB_OWNER, name):
            {None: active, "Complete": successful, "Failed": failed}[_finished(job)].append(job)
            at = meta.annotations(job).get(SCHEDULED_AT)
            if at:
                scheduled = meta.parse_time(at)
                last = scheduled if last is None or scheduled > last else last
        status = cron.setdefault("status", {})
        status["active"] = [meta.object_reference(job) for job in active]
        if last is not None:
            status["lastScheduleTime"] = meta.format_time(last)
        meta.set_status_condition(
            cron,
            type="Ready",
            status="True",
            reason="Reconciled",
            message=f"{len(active)} active, {len(successful)} succeeded, {len(failed)} failed",
            observed_generation=cron["metadata"].get("generation"),
            now=now,
        )
        if status != cached.get("status"):
            update_status(self.cronjobs_client, cron)

        for jobs, limit in (
            (successful, spec.get("successfulJobsHistoryLimit")),
            (failed, spec.get("failedJobsHistoryLimit")),
        ):
            if limit is not None:
                for job in sorted(jobs, key=lambda j: j["metadata"]["creationTimestamp"])[
                    : max(0, len(jobs) - limit)
                ]:
                    with meta.ignore_not_found():
                        self.jobs_client.delete(meta.name(job), ns, propagation_policy="Background")

        if spec.get("suspend"):
            return None
        anchor = meta.parse_time(
            status.get("lastScheduleTime") or cron["metadata"]["creationTimestamp"]
        )
        runs = int((now - anchor) / every)  # whole intervals since the anchor
        next_run = anchor + every * (runs + 1)
        wait = Result(requeue_after=(next_run - now).total_seconds())
        if runs == 0:
            return wait
        missed = anchor + every * runs
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and (now - missed).total_seconds() > deadline:
            return wait  # too late for this run
        policy = spec.get("concurrencyPolicy", "Allow")
        if policy == "Forbid" and active:
            return wait
        if policy == "Replace":
            for job in active:
                with meta.ignore_not_found():
                    self.jobs_client.delete(meta.name(job), ns, propagation_policy="Background")
        self._run(cron, missed)
        return wait

    def _run(self, cron: dict, scheduled: datetime) -> None:
        template = meta.deep_copy(cron["spec"]["jobTemplate"])
        job = {
            "apiVersion": JOBS.api_version,
            "kind": JOBS.kind,
            "metadata": {
                "name": f"{meta.name(cron)}-{int(scheduled.timestamp())}",
                "namespace": meta.namespace(cron),
                "labels": dict((template.get("metadata") or {}).get("labels") or {}),
                "annotations": {SCHEDULED_AT: meta.format_time(scheduled)},
            },
            "spec": template.get("spec") or {},
        }
        meta.set_controller_reference(cron, job)
        with (
            meta.ignore_already_exists()
        ):  # the run's name is its time: a second create is the same run
            self.jobs_client.create(job)
