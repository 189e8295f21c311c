@extension
Feature: Beyond the reference operator
  Where our controller deliberately differs from the reference operator, the difference is
  specified here, tagged @extension. `--controller reference` skips these scenarios, and says
  so; every other scenario holds for both.

  @behaviour:FT-WATCH-PODS
  Scenario: A failed pod is noticed at once, not at the next periodic re-examination
    # We watch every labelled pod; the reference reconciles on pod success only and finds a
    # failed pod at its next re-examination, up to the detection period later.
    Given an AppWrapper "quick" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration | 0s  |
      | retryPausePeriodDuration   | 30s |
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And its PodsReady condition is True within 30 seconds
    When its pods fail with exit code 1
    Then it reaches phase Resetting within 15 seconds
    And the monitor saw its Unhealthy condition True with reason FoundFailedPods

  @behaviour:FT-WATCH-COMPONENTS
  Scenario: A deleted component is noticed at once
    # We watch the wrapped objects we create; the reference does not, and finds a missing
    # component at its next re-examination.
    Given an AppWrapper "watched" wrapping a Job with 1 pod
    And its pods keep running
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And its PodsReady condition is True within 30 seconds
    When its wrapped Job is deleted
    Then it reaches phase Failed within 15 seconds
    And its Unhealthy condition is True with reason MissingComponent

  @behaviour:DEL-NOT-OWNED @behaviour:COMP-NAME-TAKEN
  Scenario: An object the AppWrapper does not own is never deleted
    # A component whose name is taken by an object the AppWrapper does not control fails the
    # workload (as in the reference). The reference then deletes that object while undeploying
    # the failed workload, although it never created it; we never delete what we do not own.
    Given a Pod "taken" that no AppWrapper owns
    And an AppWrapper "squatter" with the components:
      """
      - template:
          apiVersion: v1
          kind: Pod
          metadata:
            name: taken
          spec:
            restartPolicy: Never
            containers: [{name: main, image: busybox}]
      """
    When it is submitted to the LocalQueue
    Then it reaches phase Failed within 30 seconds
    And its Unhealthy condition is True with reason CreateFailed
    And the Pod "taken" keeps existing for 10 seconds
    When it is deleted
    Then it is gone within 30 seconds
    And the Pod "taken" keeps existing for 5 seconds

  @serial @own-controller
  @behaviour:DEL-UNSERVED-KIND
  Scenario: Deleting a workload whose component's kind is no longer served finishes
    # An object of a kind the API server does not serve cannot exist. The reference retries
    # the deletion of such a component forever, so its AppWrapper stays Terminating. We take
    # it as deleted once every discovery for 30 s has missed its kind (a margin for an API
    # server that has just started and does not serve its CRD groups yet), and say so in an
    # event.
    Given a kind "Widget" of the scenario's own, which the controller may manage
    And an AppWrapper "orphan" with the components:
      """
      - template:
          apiVersion: ${namespace}.awconf.dev/v1
          kind: Widget
          metadata:
            name: orphan
      - template:
          apiVersion: v1
          kind: Pod
          metadata:
            name: orphan-pod
          spec:
            restartPolicy: Never
            containers: [{name: main, image: busybox}]
      """
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When the controller is killed
    And the kind "Widget" stops being served
    And it is deleted
    And the controller is started again
    Then it reaches phase Terminating within 30 seconds
    And it stays Terminating for 20 seconds
    And it is gone within 30 seconds
    And it has an event CompononetDeleted containing "counts as deleted" within 10 seconds
    And no pod of it remains

  @gpu
  @behaviour:FT-AUTOPILOT-AT-ONCE @behaviour:FT-AUTOPILOT-RESET
  Scenario: A node that Autopilot marks for eviction is noticed at once
    # The reference notices an EVICT label at its next periodic re-examination of the
    # AppWrapper (60 s, so "Fault tolerance" allows 90 s); we look at the AppWrappers with pods
    # on a node as soon as one of its resources turns NoExecute.
    Given an AppWrapper "evicted" wrapping a Job with 1 pod
    And its pods request 1 GPU
    And it has a node of its own with 2 GPUs
    When it is submitted to the LocalQueue
    Then 1 pod of it is Running within 60 seconds
    When the node of its pod is labelled "autopilot.ibm.com/gpuhealth=EVICT"
    Then it reaches phase Resetting within 10 seconds
    And the monitor saw its Unhealthy condition True with reason AutopilotNoExecute
    And its resettingCount is 0
