"""kubebuilder's CronJob tutorial types, in Python: a spec embedding the full JobTemplateSpec."""

from typing import Annotated, Literal

from typing_extensions import NotRequired, TypedDict

from pyinformers import crd, k8s


class CronJobSpec(TypedDict):
    """CronJobSpec defines the desired state of CronJob."""

    schedule: Annotated[str, crd.MinLength(0)]
    """The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."""
    startingDeadlineSeconds: NotRequired[Annotated[int, crd.Minimum(0), crd.Format("int64")]]
    """Optional deadline in seconds for starting the job if it misses scheduled time for any reason."""
    concurrencyPolicy: NotRequired[
        Annotated[Literal["Allow", "Forbid", "Replace"], crd.Default("Allow")]
    ]
    """Specifies how to treat concurrent executions of a Job."""
    suspend: NotRequired[bool]
    """This flag tells the controller to suspend subsequent executions."""
    jobTemplate: k8s.JobTemplateSpec
    """Specifies the job that will be created when executing a CronJob."""
    successfulJobsHistoryLimit: NotRequired[Annotated[int, crd.Minimum(0), crd.Format("int32")]]
    failedJobsHistoryLimit: NotRequired[Annotated[int, crd.Minimum(0), crd.Format("int32")]]


class CronJobStatus(TypedDict, total=False):
    """CronJobStatus defines the observed state of CronJob."""

    active: Annotated[list[k8s.ObjectReference], crd.ListType("atomic"), crd.MaxItems(10)]
    """A list of pointers to currently running jobs."""
    lastScheduleTime: crd.Time
    """Information when was the last time the job was successfully scheduled."""
    conditions: Annotated[list[k8s.Condition], crd.ListType("map"), crd.ListMapKeys("type")]


class CronJob(crd.Object):
    """CronJob is the Schema for the cronjobs API."""

    spec: CronJobSpec
    status: NotRequired[CronJobStatus]


CRONJOB_CRD = crd.CustomResource(
    group="batch.tutorial.kubebuilder.io",
    kind="CronJob",
    short_names=["cj"],
    categories=["all"],
    versions=[
        crd.Version(
            "v1",
            CronJob,
            printer_columns=[
                crd.PrinterColumn("Schedule", ".spec.schedule"),
                crd.PrinterColumn("Suspend", ".spec.suspend"),
                crd.PrinterColumn("Last", ".status.lastScheduleTime"),
            ],
            scale=None,
        )
    ],
)
