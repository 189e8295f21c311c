Feature: Deletion of the wrapped resources
  `ResourcesDeployed=False` is a promise that nothing of the workload is left: no wrapped object
  and no labelled pod (DEL-NOTHING-LEFT). Deletion escalates to forceful deletion after the
  forceful-deletion grace period. The invariant monitor checks the promise on every release.

  The forceful-deletion grace period is 16 s in the scenarios below: a deletion pass comes every
  5 s (DEL-PASSES), so pods hanging in termination are forced between 16 and 21 s after the
  deletion began, and a controller applying half the period (8 s) forces them by 13 s, one
  applying twice the period (32 s) after 32 s. 5 s more are left for a busy API server.

  @behaviour:DEL-NOTHING-LEFT @behaviour:DEL-DELETING-CONDITION @behaviour:DEL-FORCEFUL @behaviour:DEL-PASSES @behaviour:KQ-QUOTA-UNTIL-GONE
  Scenario: ResourcesDeployed stays True while pods hang in termination
    Given an AppWrapper "hanging" wrapping a Deployment with 2 replicas
    And its pods hang on deletion
    And its annotation "forcefulDeletionGracePeriodDuration" is "16s"
    When it is submitted to the LocalQueue
    Then 2 pods of it are Running within 60 seconds
    When Kueue deactivates its workload
    Then it reaches phase Suspending within 30 seconds
    And it stays Suspending for 4 seconds
    # DeletingResources may be written a reconcile after the phase.
    And it matches within 30 seconds:
      """
      status:
        conditions:
        - {type: ResourcesDeployed, status: "True"}
        - {type: QuotaReserved, status: "True"}
        - {type: DeletingResources, status: "True", reason: DeletionInitiated}
      """
    # The Deployment's pods are deleted by the garbage collector, after the Deployment.
    And its pods match within 30 seconds:
      """
      metadata:
        deletionTimestamp: $present
      """
    # Forceful deletion comes once the grace period is over, at the next pass (every 5 s), and
    # the pass after it finds the pods gone (DEL-FORCEFUL).
    And its pods are gone between 16 and 26 seconds after it began deleting
    And it reaches phase Suspended within 15 seconds
    And no pod of it remains
    And it matches:
      """
      status:
        conditions:
        - {type: ResourcesDeployed, status: "False", reason: Suspended}
        - {type: DeletingResources, status: "False", reason: DeletionComplete}
      """

  @behaviour:DEL-NOTHING-LEFT @behaviour:DEL-DELETING-CONDITION @behaviour:DEL-FORCEFUL @behaviour:DEL-PASSES @behaviour:KQ-QUOTA-UNTIL-GONE
  Scenario: ResourcesDeployed stays True while pods hang in termination during a reset
    Given an AppWrapper "resetting" wrapping a Pod and a Pod
    And its pods hang on deletion
    And the pods of component 2 fail with exit code 1 after 2 seconds
    And it has the annotations:
      | failureGracePeriodDuration          | 0s  |
      | retryPausePeriodDuration            | 30s |
      | forcefulDeletionGracePeriodDuration | 16s |
    When it is submitted to the LocalQueue
    Then it reaches phase Resetting within the detection period
    And it stays Resetting for 4 seconds
    # DeletingResources may be written a reconcile after the phase.
    And it matches within 30 seconds:
      """
      status:
        conditions:
        - {type: ResourcesDeployed, status: "True"}
        - {type: QuotaReserved, status: "True"}
        - {type: DeletingResources, status: "True", reason: DeletionInitiated}
      """
    And its pods match:
      """
      metadata:
        deletionTimestamp: $present
      """
    And its pods are gone between 16 and 26 seconds after it began deleting
    # The retry pause (30 s from Unhealthy) may be over when the deletion completes; then the
    # same reconcile deploys again and ResourcesDeployed is never seen False (PH-RESET-RESUMES).
    And it matches within 15 seconds:
      """
      status:
        resettingCount: 1
        conditions:
        - {type: QuotaReserved, status: "True"}
        - {type: DeletingResources, status: "False", reason: DeletionComplete}
      """

  @behaviour:DEL-NOTHING-LEFT @behaviour:DEL-DELETING-CONDITION @behaviour:DEL-FORCEFUL @behaviour:DEL-PASSES @behaviour:DEL-FAILED-CLEANUP @behaviour:FT-WARMUP-GRACE @behaviour:FT-RETRY-LIMIT
  Scenario: ResourcesDeployed stays True while pods hang in termination after the retries ran out
    # Pods that never start reset the workload once the warmup grace period is over; the
    # second time the retry limit of 1 is used up.
    Given an AppWrapper "exhausted" wrapping a Pod
    And its pods stay pending
    And its pods hang on deletion
    And it has the annotations:
      | warmupGracePeriodDuration           | 3s  |
      | retryPausePeriodDuration            | 1s  |
      | retryLimit                          | 1   |
      | forcefulDeletionGracePeriodDuration | 16s |
    When it is submitted to the LocalQueue
    Then it reaches phase Failed within 90 seconds
    And the monitor saw it go from Resetting to Resuming
    And its resettingCount is 1
    And it matches:
      """
      status:
        conditions:
        - {type: Unhealthy, status: "True", reason: InsufficientPodsReady}
        - {type: ResourcesDeployed, status: "True"}
        - {type: QuotaReserved, status: "True"}
      """
    And its pods match within 10 seconds:
      """
      metadata:
        deletionTimestamp: $present
      """
    And its pods are gone between 16 and 26 seconds after it began deleting
    And it matches within 15 seconds:
      """
      status:
        conditions:
        - {type: ResourcesDeployed, status: "False", reason: Failed, message: Resources deleted for failed AppWrapper}
        - {type: QuotaReserved, status: "False", reason: Failed, message: No resources deployed}
        - {type: DeletingResources, status: "False", reason: DeletionComplete}
      """
    And no pod of it remains

  @behaviour:DEL-ON-FAILURE-PAUSE @behaviour:DEL-ON-FAILURE-SUSPEND @behaviour:FT-EXIT-TERMINAL @behaviour:FT-GRACE-CLAMP
  Scenario: DeletionOnFailureGracePeriod keeps a failed workload's resources until Kueue suspends it
    Given an AppWrapper "debug" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration           | 0s |
      | terminalExitCodes                    | 3  |
      | deletionOnFailureGracePeriodDuration | 1h |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 3
    Then it reaches phase Failed within the detection period
    And it stays Failed for 3 seconds
    And 1 pod of it is Failed
    # A conforming controller may record the pause in a reconcile after the one that failed it.
    And it matches within 30 seconds:
      """
      status:
        conditions:
        - {type: ResourcesDeployed, status: "True"}
        - {type: QuotaReserved, status: "True"}
        - type: DeletingResources
          status: "False"
          reason: DeletionPaused
          message: workload.codeflare.dev.appwrapper/deletionOnFailureGracePeriodDuration has value 30s
      """
    When Kueue deactivates its workload
    Then it matches within 30 seconds:
      """
      status:
        conditions:
        - type: ResourcesDeployed
          status: "False"
          reason: Failed
          message: Kueue forced resource deletion by suspending AppWrapper
        - {type: QuotaReserved, status: "False", reason: Failed}
      """
    And no pod of it remains

  @behaviour:DEL-ON-FAILURE-PAUSE @behaviour:DEL-ON-FAILURE-REARM @behaviour:DEL-FAILED-CLEANUP @behaviour:PH-TERMINAL
  Scenario: DeletionOnFailureGracePeriod runs out by itself and the resources are deleted
    # The pods are deleted by the first pass after the 20 s pause; half the pause (10 s) or
    # twice it (40 s) falls outside the window. The pause restarts after each deletion pass
    # (DEL-ON-FAILURE-REARM), so ResourcesDeployed may turn False only after a second pause.
    Given an AppWrapper "inspected" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration           | 0s  |
      | terminalExitCodes                    | 3   |
      | deletionOnFailureGracePeriodDuration | 20s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 3
    Then it reaches phase Failed within the detection period
    And it stays Failed for 4 seconds
    And 1 pod of it is Failed
    And it matches within 5 seconds:
      """
      status:
        conditions:
        - {type: ResourcesDeployed, status: "True"}
        - {type: QuotaReserved, status: "True"}
        - type: DeletingResources
          status: "False"
          reason: DeletionPaused
          message: workload.codeflare.dev.appwrapper/deletionOnFailureGracePeriodDuration has value 20s
      """
    And its pods are gone between 20 and 30 seconds after it paused deletion
    And it matches within 40 seconds:
      """
      status:
        phase: Failed
        conditions:
        - {type: ResourcesDeployed, status: "False", reason: Failed, message: Resources deleted for failed AppWrapper}
        - {type: QuotaReserved, status: "False", reason: Failed, message: No resources deployed}
      """
    And the ClusterQueue has 0 admitted workloads within 30 seconds

  @behaviour:DEL-SUCCESS-TTL @behaviour:PH-TERMINAL
  Scenario: SuccessTTL deletes a succeeded workload's resources
    # The TTL is measured from deployment (DEL-SUCCESS-TTL), not from success: the pod
    # succeeds about 22 s after deployment, between half the TTL of 40 s and the whole of it,
    # so a TTL measured from success would end at about 62 s and half the TTL would delete
    # at success. Deletion takes passes 5 s apart: the Job goes in the first, its pod (removed
    # by the garbage collector) by the third at the latest.
    Given an AppWrapper "ttl" wrapping a Job with 1 pod
    And its pods succeed after 20 seconds
    And its annotation "successTTLDuration" is "40s"
    When it is submitted to the LocalQueue
    Then it reaches phase Succeeded within 60 seconds
    And 1 pod of it is Succeeded
    And its ResourcesDeployed condition is True
    And it matches between 40 and 56 seconds after it was deployed:
      """
      status:
        phase: Succeeded
        conditions:
        - type: ResourcesDeployed
          status: "False"
          reason: Succeeded
          message: Time to live after success of 40s expired
      """
    And no pod of it remains
    And no wrapped object of it remains

  @behaviour:DEL-NOTHING-LEFT @behaviour:DEL-DELETING-CONDITION @behaviour:DEL-SUCCESS-TTL @behaviour:PH-TERMINAL
  Scenario: ResourcesDeployed stays True after the SuccessTTL while a succeeded pod is kept
    # A pod that succeeded cannot hang in termination (the API server removes it at once), so
    # a finalizer keeps it; the controller must wait for it however long it takes.
    Given an AppWrapper "kept" wrapping a Pod
    And its pods succeed after 2 seconds
    And its pods carry a finalizer
    And it has the annotations:
      | successTTLDuration                  | 5s |
      | forcefulDeletionGracePeriodDuration | 5s |
    When it is submitted to the LocalQueue
    Then it reaches phase Succeeded within 60 seconds
    And its pods match within 30 seconds:
      """
      metadata:
        deletionTimestamp: $present
      status:
        phase: Succeeded
      """
    And it stays Succeeded for 12 seconds
    And it matches:
      """
      status:
        conditions:
        - {type: ResourcesDeployed, status: "True", reason: Succeeded}
        - {type: DeletingResources, status: "True", reason: DeletionInitiated}
      """
    When the finalizer of its pods is removed
    Then it matches within 30 seconds:
      """
      status:
        phase: Succeeded
        conditions:
        - type: ResourcesDeployed
          status: "False"
          reason: Succeeded
          message: Time to live after success of 5s expired
        - {type: DeletingResources, status: "False", reason: DeletionComplete}
      """
    And no pod of it remains

  @behaviour:PH-TERMINATING @behaviour:DEL-FINALIZER-LAST
  Scenario: Deleting a running AppWrapper passes through Terminating and removes its finalizer last
    Given an AppWrapper "doomed" wrapping a Pod
    And its pods hang on deletion
    And its annotation "forcefulDeletionGracePeriodDuration" is "8s"
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And 1 pod of it is Running within 60 seconds
    When it is deleted
    Then it reaches phase Terminating within 15 seconds
    And it matches:
      """
      metadata:
        deletionTimestamp: $present
        finalizers: [workload.codeflare.dev/finalizer]
      status:
        conditions:
        - {type: ResourcesDeployed, status: "True"}
      """
    And its pods match within 10 seconds:
      """
      metadata:
        deletionTimestamp: $present
      """
    And it stays Terminating for 3 seconds
    And it is gone within 30 seconds
    And no pod of it remains
    And the monitor saw it go from Running to Terminating
