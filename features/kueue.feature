Feature: Working with Kueue
  Kueue decides when an AppWrapper runs (it flips spec.suspend); the controller decides how.
  Kueue reads QuotaReserved as "active": it must stay True until every resource is gone
  (spec §1.7).

  Scenario: Admission fills podSetInfos, and the controller puts them into the pods
    Given an AppWrapper "placed" wrapping a Job with 2 pods
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And it matches:
      """
      spec:
        components:
        - podSetInfos:
            $length: 1
            $items:
            - nodeSelector: {type: kwok}
              tolerations: [{key: awconf.dev/flavor, operator: Exists, effect: NoSchedule}]
              labels: {kueue.x-k8s.io/podset: placed-0}
      """
    And 2 pods of it are Running within 60 seconds
    And its pods match:
      """
      metadata:
        labels:
          kueue.x-k8s.io/podset: placed-0
          workload.codeflare.dev/appwrapper: placed
      spec:
        nodeSelector: {type: kwok}
        tolerations: [{key: awconf.dev/flavor, operator: Exists, effect: NoSchedule}]
      """
    And its wrapped Job matches:
      """
      metadata:
        labels: {workload.codeflare.dev/appwrapper: placed}
        ownerReferences:
        - {kind: AppWrapper, name: placed, controller: true, blockOwnerDeletion: true}
      """

  Scenario: A higher-priority workload preempts a running one, which resumes when room is back
    Given the ClusterQueue has a quota of 1 CPU
    And the ClusterQueue preempts lower-priority workloads
    And a WorkloadPriorityClass "awconf-low" with value 100
    And a WorkloadPriorityClass "awconf-high" with value 1000
    And an AppWrapper "low" wrapping a Pod
    And its pods request 1 CPU
    And it has priority class "awconf-low"
    And an AppWrapper "high" wrapping a Pod
    And its pods request 1 CPU
    And it has priority class "awconf-high"
    When the AppWrapper "low" is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When the AppWrapper "high" is submitted to the LocalQueue
    Then the AppWrapper "low" reaches phase Suspended within 60 seconds
    And the monitor saw it go from Running to Suspending
    And it matches:
      """
      spec:
        suspend: true
        components:
        - podSetInfos: $absent
      status:
        conditions:
        - {type: QuotaReserved, status: "False", reason: Suspended}
      """
    And the AppWrapper "high" reaches phase Running within 60 seconds
    When the AppWrapper "high" is deleted
    Then the AppWrapper "low" reaches phase Running within 60 seconds
    And the monitor saw it go from Suspended to Resuming
    And its resettingCount is 0

  Scenario: The quota of a preempted workload is released only after its resources are gone
    Given the ClusterQueue has a quota of 1 CPU
    And the ClusterQueue preempts lower-priority workloads
    And a WorkloadPriorityClass "awconf-low" with value 100
    And a WorkloadPriorityClass "awconf-high" with value 1000
    And an AppWrapper "low" wrapping a Pod
    And its pods request 1 CPU
    And its pods hang on deletion
    And it has priority class "awconf-low"
    And its annotation "forcefulDeletionGracePeriodDuration" is "8s"
    And an AppWrapper "high" wrapping a Pod
    And its pods request 1 CPU
    And it has priority class "awconf-high"
    When the AppWrapper "low" is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    When the AppWrapper "high" is submitted to the LocalQueue
    Then the AppWrapper "low" reaches phase Suspending within 60 seconds
    And the AppWrapper "high" stays Suspended for 4 seconds
    And the AppWrapper "low"'s QuotaReserved condition is True
    And the AppWrapper "low" reaches phase Suspended within 30 seconds
    And no pod of it remains
    And the AppWrapper "high" reaches phase Running within 60 seconds
