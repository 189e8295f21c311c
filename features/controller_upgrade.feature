@serial @controller-upgrade
Feature: Controller upgrades with work in flight
  A user upgrades the controller while AppWrappers are in every phase: a rollout of a newer
  build, or the reference operator replaced by another conforming controller (the drop-in
  path). Everything that matters between two reconciles lives in the AppWrapper's status, so
  the new controller carries on where the old one stopped: it loses, duplicates and
  double-counts nothing, and ends the pauses the old one began when they end, neither sooner
  nor a whole pause later.

  The run names the controller the upgrade starts from with `--controller-upgrade-from`
  (`reference`, or the path of an older build of ours); without it these scenarios are skipped
  with that reason. The scenario stops the controller under test, runs the old one in its place
  with the same settings and webhooks, then stops the old one (SIGTERM, as a rollout does) and
  starts the controller under test again, which registers its own webhooks.

  @behaviour:RS-UPGRADE @behaviour:RS-COUNT-ONCE @behaviour:RS-TIMERS-FROM-STATUS
  Scenario: A controller upgrade with work in flight loses, duplicates and double-counts nothing
    # When the upgrade starts there is an AppWrapper in each of these states: Running; queued
    # and Suspended (its 2 CPUs do not fit beside the running one's 2 in a quota of 3; every
    # other pod requests 100m); being deleted, its pod held by a finalizer; Resetting during its
    # retry pause. The old controller may take the detection period to notice the failure, so
    # the upgrade follows the Resetting at once: the suite clamps grace periods to 30 s.
    Given the controller the upgrade starts from runs in place of the controller under test
    And the ClusterQueue has a quota of 3 CPUs
    And an AppWrapper "running" wrapping a Job with 2 pods
    And its pods request 1 CPU
    And an AppWrapper "queued" wrapping a Pod
    And its pods request 2 CPUs
    And an AppWrapper "deleting" wrapping a Pod
    And its pods carry a finalizer
    And an AppWrapper "resetting" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s  |
      | retryPausePeriodDuration   | 30s |
    And an AppWrapper "after" wrapping a Pod
    When the AppWrapper "running" is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And 2 pods of it are Running within 60 seconds
    When the AppWrapper "queued" is submitted to the LocalQueue
    Then its workload matches within 30 seconds:
      """
      status:
        conditions:
        - {type: QuotaReserved, status: "False"}
      """
    # Kueue makes the Workload and the controller its first status on their own: either may
    # come first.
    And it reaches phase Suspended within 30 seconds
    When the AppWrapper "deleting" is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    When it is deleted
    Then its pods match within 30 seconds:
      """
      metadata:
        deletionTimestamp: $present
      """
    When the AppWrapper "resetting" is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then it reaches phase Resetting within the detection period
    When the controller is upgraded to the controller under test
    Then the AppWrapper "running" is in phase Running
    And its QuotaReserved condition is True
    And its pods are the ones it had before the upgrade
    And 2 pods of it are Running
    And the monitor saw it never leave Running
    And the AppWrapper "queued" is in phase Suspended
    And the AppWrapper "deleting" matches:
      """
      metadata:
        deletionTimestamp: $present
      """
    And each AppWrapper has exactly one workload and no other workload exists
    # The retry pause the old controller began ends when it would have: not at the upgrade,
    # and not a whole pause after it. The reset is counted once.
    And the AppWrapper "resetting" reaches phase Running between 30 and 45 seconds after it became Unhealthy
    And the monitor saw it go from Resetting to Resuming
    And its resettingCount is 1
    # Admission resumes, and the work in flight ends as it would have without the upgrade.
    When the AppWrapper "after" is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And 1 pod of it is Running within 60 seconds
    When the finalizer of the AppWrapper "deleting"'s pods is removed
    Then the AppWrapper "deleting" is gone within 60 seconds
    And no pod of it remains
    And each AppWrapper has exactly one workload and no other workload exists
    And the ClusterQueue reserves 2.2 CPUs within 30 seconds
    When the AppWrapper "running" is deleted
    Then the AppWrapper "queued" reaches phase Running within 60 seconds
    And the AppWrapper "running" is gone within 60 seconds
    And each AppWrapper has exactly one workload and no other workload exists
    And the ClusterQueue reserves 2.2 CPUs within 30 seconds
    And the AppWrapper "after"'s workload matches:
      """
      status:
        conditions:
        - {type: QuotaReserved, status: "True"}
        - {type: Admitted, status: "True"}
      """

  @behaviour:RS-UPGRADE @behaviour:RS-TIMERS-FROM-STATUS @behaviour:DEL-ON-FAILURE-PAUSE @behaviour:DEL-ON-FAILURE-REARM
  Scenario: A controller upgrade during a failed AppWrapper's deletion pause ends the pause on time
    # The upgrade follows the pause's start at once (the suite clamps it to 30 s): the
    # controller under test deletes the pods when the pause the old one began ends.
    Given the controller the upgrade starts from runs in place of the controller under test
    And an AppWrapper "failed" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration           | 0s  |
      | terminalExitCodes                    | 3   |
      | deletionOnFailureGracePeriodDuration | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 3
    Then it reaches phase Failed within the detection period
    # A conforming controller may record the pause in a reconcile after the one that failed it.
    And it matches within 10 seconds:
      """
      status:
        conditions:
        - {type: DeletingResources, status: "False", reason: DeletionPaused}
      """
    When the controller is upgraded to the controller under test
    Then it is in phase Failed
    And 1 pod of it is Failed
    # The first deletion pass after the pause deletes the pods; the pause restarts after each
    # pass (DEL-ON-FAILURE-REARM), so ResourcesDeployed may turn False only after a second pause.
    And its pods are gone between 30 and 45 seconds after it paused deletion
    And it matches within 45 seconds:
      """
      status:
        phase: Failed
        conditions:
        - {type: ResourcesDeployed, status: "False", reason: Failed, message: Resources deleted for failed AppWrapper}
        - {type: QuotaReserved, status: "False", reason: Failed}
      """
    And no pod of it remains
    And its resettingCount is 0
    And each AppWrapper has exactly one workload and no other workload exists
