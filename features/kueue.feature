Feature: Working with Kueue
  Kueue decides when an AppWrapper runs (it flips spec.suspend); the controller decides how.
  Kueue reads QuotaReserved as "active": it must stay True until every resource is gone
  (KQ-QUOTA-UNTIL-GONE).

  @behaviour:KQ-POD-SET-INFOS @behaviour:COMP-OWNED @behaviour:COMP-POD-LABEL
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
              tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
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
        tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
      """
    And its wrapped Job matches:
      """
      metadata:
        labels: {workload.codeflare.dev/appwrapper: placed}
        ownerReferences:
        - {kind: AppWrapper, name: placed, controller: true, blockOwnerDeletion: true}
      """

  @behaviour:KQ-PREEMPTION @behaviour:PH-SUSPEND
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

  @behaviour:KQ-QUOTA-UNTIL-GONE @behaviour:DEL-FORCEFUL
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
    # Kueue has not admitted "high" while "low"'s pods remain. Its phase may still be empty
    # here: a controller may move a new AppWrapper to Suspended a little later.
    And the AppWrapper "high" keeps matching for 4 seconds:
      """
      spec:
        suspend: true
      """
    And the AppWrapper "low"'s QuotaReserved condition is True
    # Its pods hang until the forceful deletion, 8 seconds after the deletion began.
    And the AppWrapper "low" reaches phase Suspended between 8 and 27 seconds after it began deleting
    And no pod of it remains
    And the AppWrapper "high" reaches phase Running within 60 seconds

  @behaviour:KQ-POD-SET-INFOS
  Scenario: Two components placed on two ResourceFlavors each get their own podSetInfos
    # Each flavor has room for one of the two podSets, so Kueue puts the first on the first
    # flavor and the second on the other; each component's pods get that flavor's node labels.
    Given the ClusterQueue has 1 CPU on each of the ResourceFlavors:
      | flavor | node label                         |
      | first  | kubernetes.io/hostname=kwok-node-0 |
      | second | kubernetes.io/hostname=kwok-node-1 |
    And an AppWrapper "spread" wrapping a Pod and a Job with 1 pod
    And its pods request 1 CPU
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And it matches:
      """
      spec:
        components:
        - podSetInfos: [{nodeSelector: {kubernetes.io/hostname: kwok-node-0}, labels: {kueue.x-k8s.io/podset: spread-0}}]
        - podSetInfos: [{nodeSelector: {kubernetes.io/hostname: kwok-node-1}, labels: {kueue.x-k8s.io/podset: spread-1}}]
      """
    And 2 pods of it are Running within 60 seconds
    And the pods of component 1 match:
      """
      metadata:
        labels: {kueue.x-k8s.io/podset: spread-0}
      spec:
        nodeSelector: {kubernetes.io/hostname: kwok-node-0}
        nodeName: kwok-node-0
      """
    And the pods of component 2 match:
      """
      metadata:
        labels: {kueue.x-k8s.io/podset: spread-1}
      spec:
        nodeSelector: {kubernetes.io/hostname: kwok-node-1}
        nodeName: kwok-node-1
      """

  @behaviour:KQ-ONE-WORKLOAD @behaviour:KQ-FINISHED
  Scenario: An AppWrapper has exactly one Workload, which is finished once the AppWrapper succeeded
    # Its wrapped Jobs carry the queue-name label, so Kueue would queue each as a workload of
    # its own, unless the AppWrapper owns it as its controller (upstream e2e "Recognition of
    # Child Jobs"; KQ-ONE-WORKLOAD).
    Given an AppWrapper "single" with the components:
      """
      - template:
          apiVersion: batch/v1
          kind: Job
          metadata:
            name: single-job
            labels: {kueue.x-k8s.io/queue-name: ${queue}}
          spec:
            parallelism: 2
            completions: 2
            template:
              metadata:
                labels: {awconf.dev/outcome: running}
              spec:
                restartPolicy: Never
                containers:
                - {name: main, image: busybox, resources: {requests: {cpu: 100m}}}
      - template:
          apiVersion: batch/v1
          kind: Job
          metadata:
            name: single-job-1
            labels: {kueue.x-k8s.io/queue-name: ${queue}}
          spec:
            template:
              metadata:
                labels: {awconf.dev/outcome: running}
              spec:
                restartPolicy: Never
                containers:
                - {name: main, image: busybox, resources: {requests: {cpu: 100m}}}
      """
    When it is submitted to the LocalQueue
    Then 3 pods of it are Running within 60 seconds
    And its workload is the only one in the namespace
    When its pods succeed
    Then it reaches phase Succeeded within 30 seconds
    And its workload matches within 30 seconds:
      """
      status:
        conditions:
        - {type: Finished, status: "True"}
      """
    And its workload is the only one in the namespace
    And the ClusterQueue has 0 admitted workloads within 30 seconds

  @serial @kueue-upgrade
  @behaviour:KQ-UPGRADE @behaviour:KQ-ONE-WORKLOAD
  Scenario: An in-place Kueue upgrade with work in flight loses, duplicates and double-counts nothing
    # The run starts Kueue at the release the upgrade starts from (--kueue-upgrade-from, by
    # default the pinned release before the Kueue under test) and runs this scenario before any
    # other. The upgrade stops Kueue, applies the new release's CRDs over the old ones and
    # starts the new release on the same objects. It is skipped where Kueue is not the run's
    # own process (a cluster it is installed into) or not a release (--kueue-source, --kueue-binary).
    # When the upgrade starts there is an AppWrapper in each state that matters: Running;
    # queued and Suspended (its 2 CPUs do not fit beside the running one's 2 in a quota of 3;
    # every other pod requests 100m); being deleted, its pod held by a finalizer; Resetting
    # during its retry pause; Failed during its deletion pause. The two pauses (15 s) outlast
    # the upgrade (about 5 s), so the last two states are set up just before it. The deletion
    # pause re-arms once (its first delete pass finds the pod still there), so Failed holds its
    # resources for twice as long.
    Given Kueue runs the release the upgrade starts from
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
      | retryPausePeriodDuration   | 15s |
    And an AppWrapper "failed" wrapping a Pod
    And it has the annotations:
      | failureGracePeriodDuration           | 0s  |
      | terminalExitCodes                    | 3   |
      | deletionOnFailureGracePeriodDuration | 15s |
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
    And the AppWrapper "failed" is submitted to the LocalQueue
    Then the AppWrapper "resetting" reaches phase Running within 60 seconds
    And the AppWrapper "failed" reaches phase Running within 60 seconds
    When the AppWrapper "resetting"'s pods fail with exit code 1
    And the AppWrapper "failed"'s pods fail with exit code 3
    Then 1 pod of the AppWrapper "resetting" is Failed within 30 seconds
    And 1 pod of the AppWrapper "failed" is Failed within 30 seconds
    # An update makes a controller look at once (FT-UPDATE-LOOKS), not up to 60 s later.
    When the AppWrapper "resetting" is updated
    And the AppWrapper "failed" is updated
    Then the AppWrapper "resetting" reaches phase Resetting within 30 seconds
    And the AppWrapper "failed" reaches phase Failed within 30 seconds
    # A conforming controller may record the pause in a reconcile after the one that failed it.
    And it matches within 10 seconds:
      """
      status:
        conditions:
        - {type: DeletingResources, status: "False", reason: DeletionPaused}
      """
    And the AppWrapper "deleting" matches:
      """
      metadata:
        deletionTimestamp: $present
      """
    When Kueue is upgraded in place to the Kueue under test
    Then the AppWrapper "running" is in phase Running
    And its QuotaReserved condition is True
    And its pods are the ones it had before the upgrade
    And 2 pods of it are Running
    And the monitor saw it never leave Running
    And the AppWrapper "queued" is in phase Suspended
    And each AppWrapper has exactly one workload and no other workload exists
    # Admission resumes, and the work in flight ends as it would have without the upgrade.
    When the AppWrapper "after" is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And 1 pod of it is Running within 60 seconds
    And the AppWrapper "resetting" reaches phase Running within 60 seconds
    And the monitor saw it go from Resetting to Resuming
    And its resettingCount is 1
    And the AppWrapper "failed" matches within 60 seconds:
      """
      status:
        phase: Failed
        conditions:
        - {type: ResourcesDeployed, status: "False", reason: Failed, message: Resources deleted for failed AppWrapper}
        - {type: QuotaReserved, status: "False", reason: Failed}
      """
    And no pod of it remains
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
