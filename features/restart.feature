@serial @own-controller
Feature: Restart safety
  Everything that matters between two reconciles lives in the AppWrapper's status, so the
  controller may die at any moment: a new one converges to the same result, and counts no retry
  twice. These scenarios stop the controller under test. Where the harness starts our
  controller itself (the embedded, process and in-cluster modes), each scenario gets a
  controller of its own, which reconciles only the AppWrappers labelled
  `awconf.dev/controller: <its label>` (the shared one skips them), and runs beside the
  others; in the cluster that controller is a Deployment, which the next such scenario gets
  once this one has ended with it running and its AppWrappers gone. The
  reference operator reconciles every AppWrapper it sees, so with it on the local cluster each
  scenario gets a local cluster of its own, with its own Kueue and operator. With any other
  controller they run alone. With the `process` controller mode the controller is killed
  with SIGKILL; in the cluster its pod is deleted with grace period 0; the embedded
  controller's task is aborted (reconciles in flight are dropped unfinished). Where a
  scenario needs a failed pod noticed before it kills the controller, it updates the
  AppWrapper once the pod has failed: a controller looks at it again on every update
  (FT-UPDATE-LOOKS), and need not take the up to 60 s it may take to find the pod by itself.

  @behaviour:RS-STATUS-IS-STATE @behaviour:RS-CATCH-UP
  Scenario: Killed while Running, it finds the pods that succeeded meanwhile
    Given an AppWrapper "running" wrapping a Job with 1 pod
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    And it reaches phase Running within 30 seconds
    When the controller is killed
    And its pods succeed
    Then 1 pod of it is Succeeded within 30 seconds
    And it stays Running for 2 seconds
    When the controller is started again
    Then it reaches phase Succeeded within 30 seconds
    And its resettingCount is 0

  @behaviour:RS-STATUS-IS-STATE @behaviour:RS-COUNT-ONCE
  Scenario: Killed while Resetting, it resumes without counting the retry twice
    Given an AppWrapper "resetting" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s  |
      | retryPausePeriodDuration   | 10s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then a pod of it has failed within 30 seconds
    When it is updated
    Then it reaches phase Resetting within 30 seconds
    When the controller is killed
    Then it stays Resetting for 2 seconds
    When the controller is started again
    Then it reaches phase Running within 40 seconds
    And its resettingCount is 1
    And 1 pod of it is Running within 30 seconds

  @behaviour:RS-STATUS-IS-STATE
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

  @behaviour:RS-STATUS-IS-STATE
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

  @behaviour:RS-CATCH-UP
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

  # A timer that runs across a restart is measured from a condition's lastTransitionTime kept in
  # the status (RS-TIMERS-FROM-STATUS). In each scenario below the controller is down for long enough that
  # a controller which started the timer again from zero when it came back, or treated the lost
  # timer as expired, lands outside the window that the original deadline gives. The controller
  # stays down until a fixed point of its timer ("until N seconds after"), however long killing
  # it took (a moment when embedded, seconds for a pod in a cluster), and is back once it has
  # started again.

  @behaviour:RS-TIMERS-FROM-STATUS @behaviour:FT-RETRY-PAUSE
  Scenario: A restarted controller waits only for what is left of the retry pause
    # The pause runs from the reset (Unhealthy's lastTransitionTime, FT-RETRY-PAUSE). The
    # controller is back 13 s or more into the 20 s pause: the workload resumes at about 20 s,
    # not at once (13 s) nor 20 s after the restart (33 s or later).
    Given an AppWrapper "paused" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s  |
      | retryPausePeriodDuration   | 20s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then a pod of it has failed within 30 seconds
    When it is updated
    Then it reaches phase Resetting within 30 seconds
    When the controller is killed
    Then it stays Resetting until 13 seconds after it became Unhealthy
    When the controller is started again
    Then it reaches phase Running between 20 and 30 seconds after it became Unhealthy
    And its resettingCount is 1

  @behaviour:RS-TIMERS-FROM-STATUS @behaviour:DEL-FORCEFUL
  Scenario: A restarted controller forces the deletion when the original grace period ends
    # The forceful-deletion grace period runs from DeletingResources' lastTransitionTime (DEL-FORCEFUL).
    # The controller is back 14 s or more into the 25 s period, as in the scenarios below: the
    # pods are forced at 25 to 30 s (a pass every 5 s), not at once (14 s) nor 25 s after the
    # restart (39 s or later). The 11 s before the window opens leave a controller that takes
    # a while to start (a pod on a busy machine) time to be back before it.
    # The period starts only once DeletingResources is True, which may be a write after the
    # one that entered Suspending.
    Given an AppWrapper "stuck" wrapping a Job with 2 pods
    And its pods hang on deletion
    And its annotation "forcefulDeletionGracePeriodDuration" is "25s"
    When it is submitted to the LocalQueue
    Then 2 pods of it are Running within 60 seconds
    When Kueue deactivates its workload
    Then it reaches phase Suspending within 30 seconds
    And its DeletingResources condition is True within 30 seconds
    When the controller is killed
    Then it stays Suspending until 14 seconds after it began deleting
    When the controller is started again
    Then its pods are gone between 25 and 35 seconds after it began deleting
    And it reaches phase Suspended within 15 seconds

  @behaviour:RS-TIMERS-FROM-STATUS @behaviour:RS-COUNT-ONCE
  Scenario: A restarted controller forces a reset's deletion when the original grace period ends
    Given an AppWrapper "stuckreset" wrapping a Pod and a Pod
    And its pods hang on deletion
    And the pods of component 2 fail with exit code 1 after 2 seconds
    And it has the annotations:
      | failureGracePeriodDuration          | 0s  |
      | retryPausePeriodDuration            | 30s |
      | forcefulDeletionGracePeriodDuration | 25s |
    When it is submitted to the LocalQueue
    Then a pod of it has failed within 60 seconds
    When it is updated
    Then it reaches phase Resetting within 30 seconds
    And its DeletingResources condition is True within 30 seconds
    When the controller is killed
    Then it stays Resetting until 14 seconds after it began deleting
    When the controller is started again
    Then its pods are gone between 25 and 35 seconds after it began deleting
    And its resettingCount is 1

  @behaviour:RS-TIMERS-FROM-STATUS
  Scenario: A restarted controller forces a failed workload's deletion when the original grace period ends
    Given an AppWrapper "stuckfailed" wrapping a Pod and a Pod
    And its pods hang on deletion
    And the pods of component 2 fail with exit code 3 after 2 seconds
    And it has the annotations:
      | failureGracePeriodDuration          | 0s  |
      | terminalExitCodes                   | 3   |
      | forcefulDeletionGracePeriodDuration | 25s |
    When it is submitted to the LocalQueue
    Then a pod of it has failed within 60 seconds
    When it is updated
    Then it reaches phase Failed within 30 seconds
    And its DeletingResources condition is True within 30 seconds
    When the controller is killed
    Then it stays Failed until 14 seconds after it began deleting
    When the controller is started again
    Then its pods are gone between 25 and 35 seconds after it began deleting
    And its resettingCount is 0

  @behaviour:RS-TIMERS-FROM-STATUS @behaviour:PH-TERMINATING
  Scenario: Killed while Terminating, it finishes the deletion when the original grace period ends
    Given an AppWrapper "leaving" wrapping a Job with 1 pod
    And its pods hang on deletion
    And its annotation "forcefulDeletionGracePeriodDuration" is "25s"
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    When it is deleted
    Then it reaches phase Terminating within 15 seconds
    And its DeletingResources condition is True
    When the controller is killed
    Then it stays Terminating until 14 seconds after it began deleting
    When the controller is started again
    Then its pods are gone between 25 and 35 seconds after it began deleting
    And it is gone within 30 seconds

  @behaviour:RS-TIMERS-FROM-STATUS @behaviour:FT-FAILED-PODS
  Scenario: A restarted controller waits only for what is left of the failure grace period
    # The failure grace period runs from Unhealthy's lastTransitionTime (FT-FAILED-PODS).
    Given an AppWrapper "graceful" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 25s |
      | retryPausePeriodDuration   | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then 1 pod of it is Failed within 30 seconds
    When it is updated
    Then its Unhealthy condition is True with reason FoundFailedPods within 30 seconds
    When the controller is killed
    Then it stays Running until 14 seconds after it became Unhealthy
    When the controller is started again
    Then it reaches phase Resetting between 25 and 33 seconds after it became Unhealthy
    And its resettingCount is 1

  @behaviour:RS-TIMERS-FROM-STATUS @behaviour:FT-ADMISSION-GRACE
  Scenario: A restarted controller waits only for what is left of the admission grace period
    # Fewer pods than expected exist (one of two): the admission grace period applies, from the
    # deployment time (ResourcesDeployed's lastTransitionTime, FT-ADMISSION-GRACE).
    Given the namespace allows only 1 pod
    And an AppWrapper "unadmitted" wrapping a Job with 2 pods
    And it has the annotations:
      | admissionGracePeriodDuration | 25s |
      | warmupGracePeriodDuration    | 5s  |
      | retryPausePeriodDuration     | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 30 seconds
    When the controller is killed
    Then it stays Running until 14 seconds after it was deployed
    When the controller is started again
    Then it reaches phase Resetting between 25 and 33 seconds after it was deployed
    And the monitor saw its Unhealthy condition True with reason InsufficientPodsReady

  @behaviour:RS-TIMERS-FROM-STATUS @behaviour:FT-WARMUP-GRACE
  Scenario: A restarted controller waits only for what is left of the warmup grace period
    # Wrapped Pods, not a Job's: both exist from the deployment time, so the warmup grace is
    # the one that applies however slowly a Job controller would make its pods.
    Given an AppWrapper "warming" wrapping a Pod and a Pod
    And its pods stay pending
    And it has the annotations:
      | warmupGracePeriodDuration    | 25s |
      | admissionGracePeriodDuration | 5s  |
      | retryPausePeriodDuration     | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 30 seconds
    When the controller is killed
    Then it stays Running until 14 seconds after it was deployed
    When the controller is started again
    Then it reaches phase Resetting between 25 and 33 seconds after it was deployed
    And the monitor saw its Unhealthy condition True with reason InsufficientPodsReady

  @behaviour:RS-TIMERS-FROM-STATUS @behaviour:DEL-ON-FAILURE-PAUSE
  Scenario: A restarted controller waits only for what is left of the deletion-on-failure pause
    # The pause runs from DeletingResources' lastTransitionTime once it is False/DeletionPaused
    # (DEL-ON-FAILURE-PAUSE); writing the same condition again does not move it.
    Given an AppWrapper "inspected" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration           | 0s  |
      | terminalExitCodes                    | 3   |
      | deletionOnFailureGracePeriodDuration | 25s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 3
    Then 1 pod of it is Failed within 30 seconds
    When it is updated
    Then its DeletingResources condition is False with reason DeletionPaused within 30 seconds
    When the controller is killed
    Then it stays Failed until 14 seconds after it paused deletion
    And 1 pod of it is Failed
    When the controller is started again
    Then its pods are gone between 25 and 35 seconds after it paused deletion

  @behaviour:RS-TIMERS-FROM-STATUS @behaviour:DEL-SUCCESS-TTL
  Scenario: A restarted controller deletes a succeeded workload when the original SuccessTTL ends
    # The TTL runs from the deployment time (DEL-SUCCESS-TTL): 40 s, with success at about 22 s and
    # the controller back at about 33 s. Measured from success, or from the restart, it would
    # end at about 62 or 73 s; taken as expired, at once.
    Given an AppWrapper "ttl" wrapping a Job with 1 pod
    And its pods succeed after 20 seconds
    And its annotation "successTTLDuration" is "40s"
    When it is submitted to the LocalQueue
    Then it reaches phase Succeeded within 60 seconds
    When the controller is killed
    Then it stays Succeeded until 33 seconds after it was deployed
    When the controller is started again
    Then it matches between 40 and 56 seconds after it was deployed:
      """
      status:
        conditions:
        - type: ResourcesDeployed
          status: "False"
          reason: Succeeded
          message: Time to live after success of 40s expired
      """
