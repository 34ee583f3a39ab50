"""The kubebuilder-tutorial CronJob controller (samples/cronjob) on either server, its time faked."""

from __future__ import annotations

import time

import pytest
from prometheus_client import CollectorRegistry

from pyinformers.api import ResourceClient
from pyinformers.api.meta import is_controlled_by, is_status_condition_true, parse_time_seconds
from pyinformers.cache import SharedInformerFactory
from pyinformers.clock import FakeClock
from pyinformers.controller import install_crd
from pyinformers.resources import JOBS
from pyinformers.testing import eventually
from samples.cronjob.controller import ARTIFACTS, CRONJOBS, SCHEDULED_AT, CronJobController

pytestmark = pytest.mark.timeout(240)

WAIT = 60.0


def cronjob(name, ns, schedule="@every 60s"):
    return {
        "apiVersion": CRONJOBS.api_version,
        "kind": CRONJOBS.kind,
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "schedule": schedule,
            "concurrencyPolicy": "Forbid",
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "restartPolicy": "Never",
                            "containers": [{"name": "hello", "image": "busybox:1.36"}],
                        }
                    }
                }
            },
        },
    }


@pytest.fixture
def running(k8s):
    api_client = k8s.api_client()
    install_crd(api_client, ARTIFACTS / "crd.yaml")
    factory = SharedInformerFactory(api_client, namespace=k8s.namespace, metrics_registry=False)
    wall = FakeClock(wall_start=time.time())  # the server stamps creationTimestamp in real time
    controller = CronJobController(factory, wall_clock=wall, metrics_registry=CollectorRegistry())
    factory.start()
    controller.start()
    try:
        yield api_client, controller, wall
    finally:
        controller.stop(5)
        factory.stop(5)


def test_a_cronjob_runs_its_job_when_the_reconciles_clock_reaches_the_schedule(k8s, running):
    api_client, controller, wall = running
    ns = k8s.namespace
    crons, jobs = ResourceClient(api_client, CRONJOBS), ResourceClient(api_client, JOBS)
    crons.create(cronjob("nightly", ns))

    def ready():
        got = crons.get("nightly", ns)
        return got if is_status_condition_true(got, "Ready") else None

    first = eventually(ready, WAIT, what="the CronJob's Ready condition")
    assert jobs.list(ns).items == []  # not due yet
    created = parse_time_seconds(first["metadata"]["creationTimestamp"])
    wall.step(
        max(0.0, created + 61 - wall.time())
    )  # the reconcile's "now" moves; the queue's does not
    controller.queue.add(f"{ns}/nightly")
    job = eventually(lambda: (jobs.list(ns).items or [None])[0], WAIT, what="the scheduled Job")
    assert is_controlled_by(job, first)
    assert job["metadata"]["annotations"][SCHEDULED_AT].endswith("Z")

    def active():
        status = crons.get("nightly", ns).get("status") or {}
        return status if status.get("active") else None

    status = eventually(active, WAIT, what="the Job in status.active")
    assert status["active"][0]["name"] == job["metadata"]["name"]
    assert status["lastScheduleTime"] == job["metadata"]["annotations"][SCHEDULED_AT]
    condition = status["conditions"][0]
    assert condition["lastTransitionTime"] == first["status"]["conditions"][0]["lastTransitionTime"]
    assert "1 active" in condition["message"]


def test_an_unsupported_schedule_is_a_terminal_error_not_a_retry(k8s, running):
    api_client, controller, _ = running
    ResourceClient(api_client, CRONJOBS).create(cronjob("cron", k8s.namespace, "*/5 * * * *"))
    registry = controller.metrics_registry
    eventually(
        lambda: (
            registry.get_sample_value(
                "controller_runtime_terminal_reconcile_errors_total", {"controller": "cronjob"}
            )
            == 1
        ),
        WAIT,
        what="one terminal error",
    )
    assert controller.queue.num_requeues(f"{k8s.namespace}/cron") == 0
