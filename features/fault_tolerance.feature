Feature: Fault tolerance
  How the controller detects an unhealthy workload, when it resets it and when it gives up
  (the fault-tolerance area of spec/behaviours.yaml). Grace periods are set per AppWrapper with the
  `workload.codeflare.dev.appwrapper/...` annotations; the suite's controller clamps them to 30s
  (GracePeriodMaximum).

  A grace period is bounded on both sides, from the condition timestamps: what it delays must
  not come before the period is over, nor long after. The reference operator is not told of a
  pod that fails: it looks again every 5 s while PodsReady is False and every 60 s while it is
  True (FT-DETECTION-PERIOD), so a failure may be found up to 60 s late.

  @behaviour:FT-FAILED-PODS @behaviour:OBS-EVENT-UNHEALTHY @behaviour:CFG-OVERRIDES
  Scenario: Failed pods reset the workload once the failure grace period is over
    Given an AppWrapper "fails" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 8s  |
      | retryPausePeriodDuration   | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then its Unhealthy condition is True with reason FoundFailedPods within the detection period
    And it reaches phase Resetting between 8 and 13 seconds after it became Unhealthy
    And its resettingCount is 1
    And it has an event Unhealthy containing "1 failed pods" within 30 seconds

  # Which of the admission and warmup grace periods applies depends on how many of the expected
  # pods exist (FT-ADMISSION-GRACE, FT-WARMUP-GRACE): fewer than expected, the admission period; all of them,
  # the warmup period. In each scenario the period that applies is the longer one, 20 s, and
  # the other is 5 s, so that a controller using the shorter of the two, or the wrong one,
  # resets at about 5 s. A controller re-examines an unready workload every 5 s (FT-DETECTION-PERIOD),
  # so the reset comes between 20 and 25 s; 30 s leaves room for a busy API server. A
  # controller applying half the period (10 s) or twice it (40 s) falls outside.
  @behaviour:FT-ADMISSION-GRACE
  Scenario: Pods that are not created within the admission grace period reset the workload
    Given the namespace allows no pods
    And an AppWrapper "nopods" wrapping a Job with 2 pods
    And it has the annotations:
      | admissionGracePeriodDuration | 20s |
      | warmupGracePeriodDuration    | 5s  |
      | retryPausePeriodDuration     | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 30 seconds
    And it reaches phase Resetting within 60 seconds
    And it became Unhealthy between 20 and 30 seconds after it was deployed
    And its resettingCount is 1
    And it matches:
      """
      status:
        conditions:
        - type: Unhealthy
          status: "True"
          reason: InsufficientPodsReady
          message: 0 pods pending; 0 pods running; 0 pods succeeded
      """

  @behaviour:FT-ADMISSION-GRACE
  Scenario: Some pods created and running is still the admission grace period, not the warmup
    # The quota lets one of the two pods be created; the one that exists runs.
    Given the namespace allows only 1 pod
    And an AppWrapper "partial" wrapping a Job with 2 pods
    And it has the annotations:
      | admissionGracePeriodDuration | 20s |
      | warmupGracePeriodDuration    | 5s  |
      | retryPausePeriodDuration     | 30s |
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 30 seconds
    And it reaches phase Resetting within 60 seconds
    And it became Unhealthy between 20 and 30 seconds after it was deployed
    And its resettingCount is 1
    And it matches:
      """
      status:
        conditions:
        - type: Unhealthy
          status: "True"
          reason: InsufficientPodsReady
          message: 0 pods pending; 1 pods running; 0 pods succeeded
      """

  # Wrapped Pods exist from the deployment time on, so the warmup grace applies from then. A
  # Job's pods exist only once its controller has made them, and while fewer than expected
  # exist the admission grace applies (FT-ADMISSION-GRACE): on a starved stand a right
  # controller would reset early.
  @behaviour:FT-WARMUP-GRACE
  Scenario: Pods that do not run within the warmup grace period reset the workload
    Given an AppWrapper "slow" wrapping a Pod and a Pod
    And its pods stay pending
    And it has the annotations:
      | warmupGracePeriodDuration    | 20s |
      | admissionGracePeriodDuration | 5s  |
      | retryPausePeriodDuration     | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And its PodsReady condition is False
    And it reaches phase Resetting within 60 seconds
    And it became Unhealthy between 20 and 30 seconds after it was deployed
    And its resettingCount is 1
    And it matches:
      """
      status:
        conditions:
        - type: Unhealthy
          status: "True"
          reason: InsufficientPodsReady
          message: 2 pods pending; 0 pods running; 0 pods succeeded
      """

  @behaviour:FT-MISSING-COMPONENT @behaviour:DEL-FAILED-CLEANUP
  Scenario: A missing component fails the workload without a retry
    Given an AppWrapper "missing" wrapping a Job with 1 pod
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its wrapped Job is deleted
    Then it reaches phase Failed within the detection period
    And its resettingCount is 0
    And it matches within 30 seconds:
      """
      status:
        conditions:
        - type: Unhealthy
          status: "True"
          reason: MissingComponent
          message: Only found 0 deployed components, but was expecting 1
        - {type: ResourcesDeployed, status: "False", reason: Failed, message: Resources deleted for failed AppWrapper}
        - {type: QuotaReserved, status: "False", reason: Failed}
      """
    And no pod of it remains

  @behaviour:FT-MISSING-COMPONENT @behaviour:FT-DETECTION-PERIOD @behaviour:DEL-FAILED-CLEANUP
  Scenario Outline: A missing <kind> fails the workload without a retry
    # Upstream e2e "Deleting a Running Component yields a failed AppWrapper". Wrapped objects
    # are not watched: the periodic check of a ready workload (every 60 s) finds it.
    Given an AppWrapper "missing" wrapping a <kind> with 2 replicas
    When it is submitted to the LocalQueue
    Then 2 pods of it are Running within 60 seconds
    When its wrapped <kind> is deleted
    Then it reaches phase Failed within the detection period
    And its resettingCount is 0
    And it matches within 30 seconds:
      """
      status:
        conditions:
        - type: Unhealthy
          status: "True"
          reason: MissingComponent
          message: Only found 0 deployed components, but was expecting 1
        - {type: ResourcesDeployed, status: "False", reason: Failed, message: Resources deleted for failed AppWrapper}
        - {type: QuotaReserved, status: "False", reason: Failed}
      """
    And no pod of it remains within 30 seconds

    Examples:
      | kind        |
      | Deployment  |
      | StatefulSet |

  @behaviour:FT-RETRY-LIMIT @behaviour:DEL-FAILED-CLEANUP @behaviour:DEL-NOTHING-LEFT @behaviour:DEL-FORCEFUL @behaviour:KQ-QUOTA-UNTIL-GONE
  Scenario: With retryLimit 0 the first failure fails the workload, which keeps its quota until its resources are gone
    # Upstream controller test "A Pod Failure leads to a failed AppWrapper" (retry limit 0):
    # Failed at once, ResourcesDeployed and QuotaReserved True until the deletion completed.
    # A pod that hangs in termination holds that moment off for the forceful-deletion period.
    Given an AppWrapper "nolimit" wrapping a Pod and a Pod
    And its pods hang on deletion
    And the pods of component 2 fail with exit code 1 after 2 seconds
    And it has the annotations:
      | failureGracePeriodDuration          | 0s  |
      | retryLimit                          | 0   |
      | forcefulDeletionGracePeriodDuration | 10s |
    When it is submitted to the LocalQueue
    Then it reaches phase Failed within the detection period
    And the monitor saw it go from Running to Failed
    And its resettingCount is 0
    And it matches:
      """
      status:
        conditions:
        - {type: Unhealthy, status: "True", reason: FoundFailedPods}
        - {type: ResourcesDeployed, status: "True"}
        - {type: QuotaReserved, status: "True"}
      """
    # The pod that hangs goes at the forceful deletion, 10 seconds after the deletion began.
    And it matches between 10 and 20 seconds after it began deleting:
      """
      status:
        conditions:
        - {type: ResourcesDeployed, status: "False", reason: Failed, message: Resources deleted for failed AppWrapper}
        - {type: QuotaReserved, status: "False", reason: Failed, message: No resources deployed}
      """
    And no pod of it remains
    And the ClusterQueue has 0 admitted workloads within 30 seconds

  @behaviour:FT-FAILED-COMPONENT
  Scenario: A Job that failed resets the workload without waiting for the failure grace period
    # A failed component has no grace period (FT-FAILED-COMPONENT). The Job fails by its
    # deadline, and the Job controller deletes its pod rather than failing it, so no failed pod
    # can make a controller wait out the failure grace period legitimately. Unhealthy becomes
    # True in the reconcile that resets: Resetting comes at once, and lasts the 30 s retry
    # pause. A controller that waited the (clamped) 30 s grace would reset 30 s after it.
    Given an AppWrapper "jobfails" wrapping a Job with 1 pod and activeDeadlineSeconds 5
    And it has the annotations:
      | failureGracePeriodDuration   | 1h  |
      | admissionGracePeriodDuration | 1h  |
      | warmupGracePeriodDuration    | 1h  |
      | retryPausePeriodDuration     | 30s |
    When it is submitted to the LocalQueue
    Then its Unhealthy condition is True within the detection period plus 10 seconds
    And it reaches phase Resetting between 0 and 5 seconds after it became Unhealthy
    And it matches:
      """
      status:
        resettingCount: 1
        conditions:
        - {type: Unhealthy, status: "True", reason: FailedComponent, message: Found 1 failed components}
      """

  @behaviour:FT-FAILED-COMPONENT @behaviour:FT-RETRY-LIMIT
  Scenario: A Job that failed with retryLimit 0 fails the workload without waiting
    # As above, with no retry left: the same reconcile that finds the failed component fails
    # the workload (FT-FAILED-COMPONENT, FT-RETRY-LIMIT).
    Given an AppWrapper "jobfailsonce" wrapping a Job with 1 pod and activeDeadlineSeconds 5
    And it has the annotations:
      | failureGracePeriodDuration   | 1h |
      | admissionGracePeriodDuration | 1h |
      | warmupGracePeriodDuration    | 1h |
      | retryLimit                   | 0  |
    When it is submitted to the LocalQueue
    Then its Unhealthy condition is True within the detection period plus 10 seconds
    And it reaches phase Failed between 0 and 5 seconds after it became Unhealthy
    And its resettingCount is 0
    And its Unhealthy condition is True with reason FailedComponent

  @behaviour:FT-RETRY-PAUSE @behaviour:KQ-QUOTA-UNTIL-GONE
  Scenario: The retry pause keeps the quota
    # The pause outlasts the deletion of the pods even on a loaded machine (it took 19 s
    # there with the reference operator), so that the checks below fall inside it.
    Given an AppWrapper "pausing" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s  |
      | retryPausePeriodDuration   | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then it reaches phase Resetting within the detection period
    And the monitor saw its ResourcesDeployed condition False with reason Resetting within 15 seconds
    And no pod of it remains
    And it stays Resetting for 3 seconds
    And its QuotaReserved condition is True
    And the ClusterQueue has 1 admitted workload
    And its workload matches:
      """
      status:
        conditions:
        - {type: QuotaReserved, status: "True"}
        - {type: Admitted, status: "True"}
      """
    # The pause is measured from when Unhealthy became True (FT-RETRY-PAUSE).
    And it reaches phase Running between 30 and 40 seconds after it became Unhealthy
    And its resettingCount is 1

  @behaviour:FT-RETRY-LIMIT @behaviour:PH-RESET-RESUMES @behaviour:DEL-FAILED-CLEANUP @behaviour:KQ-FINISHED
  Scenario: Exceeding the retry limit fails the workload, deletes everything and releases the quota
    Given an AppWrapper "hopeless" wrapping a Pod
    And its pods fail with exit code 1 after 1 second
    And it has the annotations:
      | failureGracePeriodDuration | 0s |
      | retryPausePeriodDuration   | 1s |
      | retryLimit                 | 1  |
    When it is submitted to the LocalQueue
    Then it reaches phase Failed within 2 detection periods
    And the monitor saw it go from Resetting to Resuming
    And its resettingCount is 1
    And it matches within 30 seconds:
      """
      status:
        conditions:
        - {type: ResourcesDeployed, status: "False", reason: Failed}
        - {type: QuotaReserved, status: "False", reason: Failed, message: No resources deployed}
      """
    And no pod of it remains
    And no wrapped object of it remains
    And the ClusterQueue has 0 admitted workloads within 30 seconds
    And its workload matches:
      """
      status:
        conditions:
        - {type: Finished, status: "True"}
      """

  @behaviour:FT-SUSPEND-KEEPS-COUNT @behaviour:KQ-PREEMPTION
  Scenario: Kueue suspends a workload during its retry pause, and admits it again later
    Given an AppWrapper "interrupted" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s  |
      | retryPausePeriodDuration   | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then it reaches phase Resetting within the detection period
    When Kueue deactivates its workload
    Then it reaches phase Suspended within 30 seconds
    And the monitor saw it go from Resetting to Suspending
    And it matches:
      """
      status:
        resettingCount: 1
        conditions:
        - {type: QuotaReserved, status: "False", reason: Suspended}
        - {type: Unhealthy, status: "False", reason: Suspended}
      """
    When Kueue reactivates its workload
    Then it reaches phase Running within 60 seconds
    And its resettingCount is 1

  @behaviour:FT-EXIT-TERMINAL @behaviour:FT-EXIT-RETRYABLE
  Scenario Outline: Exit code <code> with <list> "<codes>" is <verdict>
    Given an AppWrapper "exits" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s      |
      | retryPausePeriodDuration   | 30s     |
      | <list>                     | <codes> |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code <code>
    Then it reaches phase <phase> within the detection period
    And its resettingCount is <count>

    Examples:
      | list               | codes | code | verdict   | phase     | count |
      | terminalExitCodes  | 42    | 42   | terminal  | Failed    | 0     |
      | terminalExitCodes  | 42    | 1    | retryable | Resetting | 1     |
      | retryableExitCodes | 10,11 | 11   | retryable | Resetting | 1     |
      | retryableExitCodes | 10,11 | 3    | terminal  | Failed    | 0     |

  @behaviour:FT-GRACE-CLAMP @behaviour:CFG-OVERRIDES
  Scenario: GracePeriodMaximum clamps a longer grace period
    Given an AppWrapper "clamped" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 24h |
      | retryPausePeriodDuration   | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then its Unhealthy condition is True with reason FoundFailedPods within the detection period
    # The retry pause is measured from the same moment, so the reset goes on to Resuming at once
    # and Resetting may be too short to be seen; the count is not.
    And it matches between 30 and 40 seconds after it became Unhealthy:
      """
      status:
        resettingCount: 1
      """
    And the monitor saw it go from Running to Resetting

  @gpu
  @behaviour:FT-AUTOPILOT-RESET @behaviour:FT-AUTOPILOT-AFFINITY
  Scenario: An Autopilot NoExecute node resets the workload without counting a retry
    Given an AppWrapper "gpu" wrapping a Job with 1 pod
    And its pods request 1 GPU
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    And its pods match:
      """
      spec:
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
              - matchExpressions:
                - {key: autopilot.ibm.com/gpuhealth, operator: NotIn, values: [TESTING, EVICT]}
      """
    When the node of its pod is labelled "autopilot.ibm.com/gpuhealth=EVICT"
    Then it reaches phase Resetting within 90 seconds
    And its resettingCount is 0
    # The reset pause may be over before a poll lands: the watch sees the condition.
    And the monitor saw its Unhealthy condition True with reason AutopilotNoExecute
    And it reaches phase Running within 60 seconds
    And its pods run on another node within 60 seconds
    And its resettingCount is 0

  @behaviour:FT-MISSING-COMPONENT
  Scenario: A NoExecute taint that evicts a wrapped Pod fails the workload: a component is missing
    Given an AppWrapper "evicted" wrapping a Pod
    And it has a node of its own
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    When the node of its pod gets a NoExecute taint "awconf.dev/broken"
    Then it reaches phase Failed within the detection period
    And its Unhealthy condition is True with reason MissingComponent
    And its resettingCount is 0

  @behaviour:FT-NODE-NOT-READY
  Scenario: A node that becomes NotReady does not by itself disturb a running workload
    Given an AppWrapper "steady" wrapping a Job with 1 pod
    And it has a node of its own
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    And its PodsReady condition is True within 30 seconds
    When the node of its pod becomes NotReady
    Then it keeps matching for 5 seconds:
      """
      status:
        phase: Running
        conditions:
        - {type: PodsReady, status: "True"}
        - {type: Unhealthy, status: "False"}
      """
