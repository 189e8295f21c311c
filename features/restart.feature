@serial @own-controller
Feature: Restart safety
  Everything that matters between two reconciles lives in the AppWrapper's status, so the
  controller may die at any moment: a new one converges to the same result, and counts no retry
  twice. These scenarios stop the controller under test. Where the harness starts our
  controller itself (the embedded and process modes), each scenario gets a controller of its
  own, which reconciles only the AppWrappers labelled `awconf.dev/controller: <its namespace>`
  (the shared one skips them), and runs beside the others; with any other controller they run
  alone. With the `process` controller mode the controller is killed with SIGKILL; the
  embedded controller's task is aborted (reconciles in flight are dropped unfinished).

  Scenario: Killed while Running, it finds the pods that succeeded meanwhile
    Given an AppWrapper "running" wrapping a Job with 1 pod
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    When the controller is killed
    And its pods succeed
    Then 1 pod of it is Succeeded within 30 seconds
    And it stays Running for 2 seconds
    When the controller is started again
    Then it reaches phase Succeeded within 30 seconds
    And its resettingCount is 0

  Scenario: Killed while Resetting, it resumes without counting the retry twice
    Given an AppWrapper "resetting" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s  |
      | retryPausePeriodDuration   | 10s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then it reaches phase Resetting within the detection period
    When the controller is killed
    Then it stays Resetting for 2 seconds
    When the controller is started again
    Then it reaches phase Running within 40 seconds
    And its resettingCount is 1
    And 1 pod of it is Running within 30 seconds

  Scenario: Killed while Resuming, it creates the components when it comes back
    Given the namespace allows no pods
    And an AppWrapper "resuming" wrapping a Pod
    And its annotation "admissionGracePeriodDuration" is "60s"
    When it is submitted to the LocalQueue
    Then it reaches phase Resuming within 30 seconds
    When the controller is killed
    And the namespace allows pods again
    Then it stays Resuming for 2 seconds
    When the controller is started again
    Then it reaches phase Running within 30 seconds
    And its resettingCount is 0
    And 1 pod of it is Running within 30 seconds

  Scenario: Killed while Suspending, it finishes the deletion when it comes back
    Given an AppWrapper "suspending" wrapping a Job with 2 pods
    And its pods hang on deletion
    And its annotation "forcefulDeletionGracePeriodDuration" is "5s"
    When it is submitted to the LocalQueue
    Then 2 pods of it are Running within 60 seconds
    When Kueue deactivates its workload
    Then it reaches phase Suspending within 30 seconds
    When the controller is killed
    Then it stays Suspending for 2 seconds
    When the controller is started again
    Then it reaches phase Suspended within 30 seconds
    And no pod of it remains
    And its resettingCount is 0

  Scenario: An AppWrapper admitted while the controller is down runs when it comes back
    Given the controller is stopped
    And an AppWrapper "late" wrapping a Job with 1 pod
    When it is submitted to the LocalQueue
    Then its workload matches within 30 seconds:
      """
      status:
        conditions:
        - {type: Admitted, status: "True"}
      """
    And it stays Empty for 2 seconds
    When the controller is started again
    Then it reaches phase Running within 30 seconds
    And 1 pod of it is Running within 30 seconds

  Scenario: A restarted controller waits only for what is left of the retry pause
    # The pause runs from the reset (Unhealthy's lastTransitionTime, spec §2.3.6), kept in the
    # status. The controller is back about 9 s into the 20 s pause: the workload must resume
    # at about 20 s (11 s after the restart), not 20 s after the restart (29 s).
    Given an AppWrapper "paused" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s  |
      | retryPausePeriodDuration   | 20s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then it reaches phase Resetting within the detection period
    When the controller is killed
    Then it stays Resetting for 8 seconds
    When the controller is started again
    Then it stays Resetting for 4 seconds
    And it reaches phase Running within 11 seconds
    And its resettingCount is 1

  Scenario: A restarted controller forces the deletion when the original grace period ends
    # The forceful-deletion grace period runs from DeletingResources' lastTransitionTime (spec
    # §4.7), kept in the status. The controller is back about 19 s into the 25 s period: the
    # pods must be forced at about 25 s and the workload Suspended by about 35 s (a controller
    # that re-checks every 5 s may force up to 5 s late and see the pods gone 5 s after),
    # not forced 25 s after the restart (44 s). The period starts only once DeletingResources
    # is True, which may be a write after the one that entered Suspending.
    Given an AppWrapper "stuck" wrapping a Job with 2 pods
    And its pods hang on deletion
    And its annotation "forcefulDeletionGracePeriodDuration" is "25s"
    When it is submitted to the LocalQueue
    Then 2 pods of it are Running within 60 seconds
    When Kueue deactivates its workload
    Then it reaches phase Suspending within 30 seconds
    And its DeletingResources condition is True within 30 seconds
    When the controller is killed
    Then it stays Suspending for 18 seconds
    When the controller is started again
    Then it stays Suspending for 3 seconds
    And it reaches phase Suspended within 18 seconds
    And no pod of it remains
