Feature: Phases
  Every edge of the AppWrapper phase diagram (PH-EDGES), each taken in a scenario of its own.
  The invariant monitor checks every observed change against the diagram and the conditions of
  every phase; each scenario ends by asking it whether it saw the edge.

  The suite's controller runs with short fault-tolerance defaults (admission 20s, warmup 30s,
  failure 5s, retry pause 2s, retry limit 3, forceful deletion 15s, ceiling 30s); scenarios set
  the annotations they rely on.

  @behaviour:PH-NEW-SUSPENDED @behaviour:PH-SUSPENDED-WAITS @behaviour:COMP-EFFECTIVE-PODSETS @behaviour:COMP-INFER-BUILT-IN
  Scenario: Empty → Suspended: a new AppWrapper waits for Kueue's admission
    Given an AppWrapper "big" wrapping a Job with 1 pod
    And its pods request 100 CPU
    When it is submitted to the LocalQueue
    Then it reaches phase Suspended within 30 seconds
    And it stays Suspended for 3 seconds
    And the monitor saw it go from Empty to Suspended
    And it matches:
      """
      metadata:
        finalizers: $absent
      spec:
        suspend: true
      status:
        phase: Suspended
        componentStatus:
          $length: 1
          $items:
          - kind: ""
            podSets:
            - path: template.spec.template
              replicas: 1
      """

  @behaviour:PH-RESUME @behaviour:PH-CREATE-RETRY @behaviour:COMP-CREATE-ERRORED
  Scenario: Suspended → Resuming: admission sets the conditions and the finalizer
    Given the namespace allows no pods
    And an AppWrapper "held" wrapping a Pod
    And its annotation "admissionGracePeriodDuration" is "60s"
    When it is submitted to the LocalQueue
    Then it reaches phase Resuming within 30 seconds
    And it stays Resuming for 3 seconds
    And the monitor saw it go from Suspended to Resuming
    # The component's refused create is recorded by a reconcile after the one that resumed it.
    And it matches within 30 seconds:
      """
      metadata:
        finalizers: [workload.codeflare.dev/finalizer]
      status:
        conditions:
        - {type: QuotaReserved, status: "True", reason: Resuming, message: Suspend is false}
        - {type: ResourcesDeployed, status: "True", reason: Resuming, message: Suspend is false}
        - {type: PodsReady, status: "False", reason: Resuming}
        - {type: Unhealthy, status: "False", reason: Resuming}
        componentStatus:
        - kind: Pod
          conditions:
          - {type: ResourcesDeployed, status: "False", reason: ComponentCreationErrored}
      """

  @behaviour:PH-RUNNING @behaviour:PH-PODS-READY @behaviour:COMP-INFER-BUILT-IN @behaviour:COMP-EXPECTED-PODS
  Scenario: Resuming → Running: once admitted, its components are created
    Given an AppWrapper "mixed" wrapping a Pod and a Job with 2 pods and a Deployment with 2 replicas and a StatefulSet with 2 replicas
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And 7 pods of it are Running within 60 seconds
    And the monitor saw it go from Resuming to Running
    And it matches within 30 seconds:
      """
      status:
        conditions:
        - {type: QuotaReserved, status: "True"}
        - {type: ResourcesDeployed, status: "True"}
        - {type: PodsReady, status: "True", reason: SufficientPodsReady, message: 7 pods running; 0 pods succeeded}
        componentStatus:
          $length: 4
          $items:
          - {kind: Pod, apiVersion: v1, name: mixed-pod, conditions: [{type: ResourcesDeployed, status: "True", reason: ComponentCreatedSuccessfully}]}
          - {kind: Job, apiVersion: batch/v1, name: mixed-job-1, podSets: [{path: template.spec.template, replicas: 2}]}
          - {kind: Deployment, apiVersion: apps/v1, name: mixed-deployment-2}
          - {kind: StatefulSet, apiVersion: apps/v1, name: mixed-statefulset-3}
      """

  @behaviour:PH-SUSPEND
  Scenario: Resuming → Suspending: Kueue evicts a workload whose components cannot be created yet
    Given the namespace allows no pods
    And an AppWrapper "held" wrapping a Pod
    And its annotation "admissionGracePeriodDuration" is "60s"
    When it is submitted to the LocalQueue
    Then it reaches phase Resuming within 30 seconds
    When Kueue deactivates its workload
    Then it reaches phase Suspended within 30 seconds
    And the monitor saw it go from Resuming to Suspending
    And the monitor saw it go from Suspending to Suspended
    And its QuotaReserved condition is False with reason Suspended

  @behaviour:PH-CREATE-FATAL @behaviour:COMP-LABEL-CONFLICT @behaviour:DEL-FAILED-CLEANUP
  Scenario: Resuming → Failed: a component that can never be created fails at once
    # Its pod template claims another AppWrapper's label, which the controller must not
    # overwrite; the admission webhook lets this through (a component in another namespace it
    # would refuse).
    Given an AppWrapper "conflicted" with the components:
      """
      - template:
          apiVersion: batch/v1
          kind: Job
          metadata:
            name: conflicted
          spec:
            template:
              metadata:
                labels:
                  workload.codeflare.dev/appwrapper: someone-else
              spec:
                restartPolicy: Never
                containers: [{name: main, image: busybox}]
      """
    When it is submitted to the LocalQueue
    Then it reaches phase Failed within 30 seconds
    And the monitor saw it go from Resuming to Failed
    And its resettingCount is 0
    # Failed comes first; the resources are deleted after it, in passes 5 s apart (DEL-PASSES).
    And it matches within 30 seconds:
      """
      status:
        conditions:
        - type: Unhealthy
          status: "True"
          reason: CreateFailed
          message: '$regex:^error creating components: .*labels'
        - {type: ResourcesDeployed, status: "False", reason: Failed}
        - {type: QuotaReserved, status: "False", reason: Failed}
      """

  # How a create error is classified (PH-CREATE-FATAL, PH-CREATE-RETRY): Invalid (422) and a kind the API server does
  # not serve are fatal, and fail the workload at once; anything else is retried every second
  # until the admission grace period is over. The quota refusal of a component is retryable.
  # A controller that retried a fatal error would be Unhealthy 30 s after deployment at the
  # earliest. The window counts from deployment, not creation: Kueue's admission on a busy
  # stand is no time of the controller's (seen at 39 s from creation beside two other suites).
  @behaviour:PH-CREATE-FATAL
  Scenario: Resuming → Failed: a component the API server refuses as invalid fails at once
    Given an AppWrapper "invalid" with the components:
      """
      - template:
          apiVersion: v1
          kind: Service
          metadata:
            name: invalid
          spec:
            ports: [{port: 0, protocol: TCP}]
      - template:
          apiVersion: v1
          kind: Pod
          metadata:
            name: invalid-pod
          spec:
            restartPolicy: Never
            containers: [{name: main, image: busybox}]
      """
    And its annotation "admissionGracePeriodDuration" is "30s"
    When it is submitted to the LocalQueue
    Then it reaches phase Failed within 30 seconds
    And it became Unhealthy between 0 and 20 seconds after it was deployed
    And its resettingCount is 0
    And it matches:
      """
      status:
        conditions:
        - type: Unhealthy
          status: "True"
          reason: CreateFailed
          message: '$regex:^error creating components: .*(Invalid|invalid)'
      """
    And no pod of it remains

  @behaviour:PH-CREATE-FATAL
  Scenario: Resuming → Failed: a kind the API server does not serve fails at once
    Given an AppWrapper "unserved" with the components:
      """
      - template:
          apiVersion: awconf.dev/v1
          kind: Widget
          metadata:
            name: unserved
      - template:
          apiVersion: v1
          kind: Pod
          metadata:
            name: unserved-pod
          spec:
            restartPolicy: Never
            containers: [{name: main, image: busybox}]
      """
    And its annotation "admissionGracePeriodDuration" is "30s"
    When it is submitted to the LocalQueue
    Then it reaches phase Failed within 30 seconds
    And it became Unhealthy between 0 and 20 seconds after it was deployed
    And its resettingCount is 0
    And its Unhealthy condition is True with reason CreateFailed
    And no pod of it remains

  @behaviour:PH-CREATE-RETRY
  Scenario: Resuming → Resetting: creation keeps failing past the admission grace period
    Given the namespace allows no pods
    And an AppWrapper "blocked" wrapping a Pod
    And it has the annotations:
      | admissionGracePeriodDuration | 20s |
      | retryPausePeriodDuration     | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Resuming within 30 seconds
    And it reaches phase Resetting between 20 and 27 seconds after it was deployed
    And the monitor saw it go from Resuming to Resetting
    And its resettingCount is 1
    And the monitor saw its Unhealthy condition True with reason CreateFailed
    And it became Unhealthy between 20 and 27 seconds after it was deployed

  # PodsReady is cleared with reason Suspended only if it was True (PH-SUSPEND), so the
  # scenario first waits for the pods to be ready.
  @behaviour:PH-SUSPEND
  Scenario: Running → Suspending: Kueue suspends a running workload
    Given an AppWrapper "evicted" wrapping a Job with 2 pods
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And its PodsReady condition is True within 30 seconds
    When Kueue deactivates its workload
    Then it reaches phase Suspended within 30 seconds
    And the monitor saw it go from Running to Suspending
    And no pod of it remains
    And it matches:
      """
      spec:
        suspend: true
      status:
        conditions:
        - {type: QuotaReserved, status: "False", reason: Suspended}
        - {type: ResourcesDeployed, status: "False", reason: Suspended}
        - {type: PodsReady, status: "False", reason: Suspended}
      """

  @behaviour:PH-SUCCEEDED
  Scenario: Running → Succeeded: every pod succeeded
    Given an AppWrapper "done" wrapping a Job with 1 pod
    And its pods succeed after 2 seconds
    When it is submitted to the LocalQueue
    Then it reaches phase Succeeded within 60 seconds
    And the monitor saw it go from Running to Succeeded
    And it matches:
      """
      status:
        conditions:
        - type: QuotaReserved
          status: "False"
          reason: Succeeded
          message: 1 pods succeeded and no running, pending, or failed pods
        - {type: ResourcesDeployed, status: "True", reason: Succeeded}
      """

  @behaviour:PH-SUCCESS-NEEDS-EVERY-POD @behaviour:PH-SUCCEEDED @behaviour:PH-PODS-READY
  Scenario: Running stays Running while one pod has succeeded and another still runs
    # Upstream controller test "Happy Path Lifecycle": success needs every pod done.
    Given an AppWrapper "half" wrapping a Pod and a Pod
    And the pods of component 1 succeed after 2 seconds
    When it is submitted to the LocalQueue
    Then 1 pod of it is Succeeded within 60 seconds
    And 1 pod of it is Running within 30 seconds
    And it reaches phase Running within 30 seconds
    And it stays Running for 5 seconds
    And it matches within 30 seconds:
      """
      status:
        conditions:
        - {type: QuotaReserved, status: "True"}
        - {type: PodsReady, status: "True", reason: SufficientPodsReady, message: 1 pods running; 1 pods succeeded}
      """
    When its pods succeed
    Then it reaches phase Succeeded within 30 seconds
    And it matches:
      """
      status:
        conditions:
        - type: QuotaReserved
          status: "False"
          reason: Succeeded
          message: 2 pods succeeded and no running, pending, or failed pods
      """

  @behaviour:FT-MISSING-COMPONENT
  Scenario: Running → Failed: a wrapped object disappears
    Given an AppWrapper "lost" wrapping a Pod
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its wrapped Pod is deleted
    Then it reaches phase Failed within the detection period
    And the monitor saw it go from Running to Failed
    And its resettingCount is 0
    And its Unhealthy condition is True with reason MissingComponent

  @behaviour:FT-FAILED-PODS
  Scenario: Running → Resetting: a pod failed and the failure grace period is over
    Given an AppWrapper "flaky" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s  |
      | retryPausePeriodDuration   | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then it reaches phase Resetting within the detection period
    And the monitor saw it go from Running to Resetting
    And its resettingCount is 1
    And the monitor saw its Unhealthy condition True with reason FoundFailedPods

  @behaviour:PH-RESET-RESUMES
  Scenario: Resetting → Resuming: after the retry pause the workload is deployed again
    Given an AppWrapper "again" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s |
      | retryPausePeriodDuration   | 2s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 1
    Then it reaches phase Resetting within the detection period
    And it reaches phase Running within 30 seconds
    And the monitor saw it go from Resetting to Resuming
    And its resettingCount is 1
    And 1 pod of it is Running within 30 seconds

  @behaviour:PH-SUSPEND @behaviour:FT-SUSPEND-KEEPS-COUNT
  Scenario: Resetting → Suspending: Kueue suspends a workload during its retry pause
    Given an AppWrapper "paused" wrapping a Pod
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
    And its resettingCount is 1

  @behaviour:PH-SUSPEND @behaviour:DEL-FORCEFUL
  Scenario: Suspending → Suspended: pods that hang in termination are deleted forcefully
    Given an AppWrapper "stuck" wrapping a Job with 2 pods
    And its pods hang on deletion
    And its annotation "forcefulDeletionGracePeriodDuration" is "6s"
    When it is submitted to the LocalQueue
    Then 2 pods of it are Running within 60 seconds
    When Kueue deactivates its workload
    Then it reaches phase Suspending within 30 seconds
    And it stays Suspending for 2 seconds
    And it reaches phase Suspended between 6 and 25 seconds after it began deleting
    And the monitor saw it go from Suspending to Suspended
    And no pod of it remains

  @behaviour:PH-TERMINATING
  Scenario: Resuming → Terminating: deleted while a component cannot be created
    Given the namespace allows no Jobs
    And an AppWrapper "half" wrapping a Pod and a Job with 1 pod
    And its annotation "admissionGracePeriodDuration" is "60s"
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    And it is in phase Resuming
    When it is deleted
    Then it is gone within 30 seconds
    And the monitor saw it go from Resuming to Terminating
    And no pod of it remains

  @behaviour:PH-TERMINATING
  Scenario: Running → Terminating: a running AppWrapper is deleted
    Given an AppWrapper "deleted" wrapping a Job with 1 pod
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    When it is deleted
    Then it is gone within 30 seconds
    And the monitor saw it go from Running to Terminating
    And no pod of it remains

  @behaviour:PH-TERMINATING
  Scenario: Resetting → Terminating: deleted while its resources are being reset
    Given an AppWrapper "resetting" wrapping a Pod and a Pod
    And its pods hang on deletion
    And the pods of component 2 fail with exit code 1 after 2 seconds
    And it has the annotations:
      | failureGracePeriodDuration          | 0s  |
      | forcefulDeletionGracePeriodDuration | 10s |
    When it is submitted to the LocalQueue
    Then it reaches phase Resetting within the detection period
    When it is deleted
    Then it reaches phase Terminating within 10 seconds
    And it is gone within 30 seconds
    And the monitor saw it go from Resetting to Terminating
    And no pod of it remains

  @behaviour:PH-TERMINATING
  Scenario: Suspending → Terminating: deleted while its pods hang in termination
    Given an AppWrapper "suspending" wrapping a Job with 1 pod
    And its pods hang on deletion
    And its annotation "forcefulDeletionGracePeriodDuration" is "10s"
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    When Kueue deactivates its workload
    Then it reaches phase Suspending within 30 seconds
    When it is deleted
    Then it reaches phase Terminating within 10 seconds
    And it is gone within 30 seconds
    And the monitor saw it go from Suspending to Terminating
    And no pod of it remains

  @behaviour:PH-TERMINATING @behaviour:FT-EXIT-TERMINAL
  Scenario: Failed → Terminating: a failed AppWrapper that keeps its resources is deleted
    Given an AppWrapper "kept" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration           | 0s |
      | terminalExitCodes                    | 3  |
      | deletionOnFailureGracePeriodDuration | 1h |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When its pods fail with exit code 3
    Then it reaches phase Failed within the detection period
    And its ResourcesDeployed condition is True
    When it is deleted
    Then it is gone within 30 seconds
    And the monitor saw it go from Failed to Terminating
    And no pod of it remains

  @behaviour:PH-TERMINATING
  Scenario: Succeeded → Terminating: a succeeded AppWrapper is deleted before its TTL
    Given an AppWrapper "finished" wrapping a Job with 1 pod
    And its pods succeed after 1 second
    When it is submitted to the LocalQueue
    Then it reaches phase Succeeded within 60 seconds
    And its ResourcesDeployed condition is True
    When it is deleted
    Then it is gone within 30 seconds
    And the monitor saw it go from Succeeded to Terminating
    And no pod of it remains
