Feature: What an AppWrapper wraps
  A component may be any object, whether it makes pods or not, and may be named by
  `generateName`: the controller creates it as it is, records the name it got, owns it, and
  counts only the pods of the podSets (COMP-ANY-OBJECT, COMP-GENERATE-NAME; upstream e2e "Creation of
  Fundamental GVKs").

  @behaviour:COMP-ANY-OBJECT @behaviour:COMP-OWNED @behaviour:COMP-EXPECTED-PODS @behaviour:PH-PODS-READY
  Scenario: A Service beside a Pod is created with it and adds no pods to wait for
    Given an AppWrapper "served" wrapping a Pod and a Service
    When it is submitted to the LocalQueue
    Then it reaches phase Running within 60 seconds
    And 1 pod of it is Running within 60 seconds
    And it stays Running for 10 seconds
    And it matches within 30 seconds:
      """
      status:
        conditions:
        - {type: PodsReady, status: "True", reason: SufficientPodsReady, message: 1 pods running; 0 pods succeeded}
        componentStatus:
          $length: 2
          $items:
          - {kind: Pod, name: served-pod, conditions: [{type: ResourcesDeployed, status: "True", reason: ComponentCreatedSuccessfully}]}
          - {kind: Service, apiVersion: v1, name: served-service-1, conditions: [{type: ResourcesDeployed, status: "True", reason: ComponentCreatedSuccessfully}]}
      """
    And its wrapped Service matches:
      """
      metadata:
        labels: {workload.codeflare.dev/appwrapper: served}
        ownerReferences:
        - {kind: AppWrapper, name: served, controller: true, blockOwnerDeletion: true}
      """
    When it is deleted
    Then it is gone within 30 seconds
    And no pod of it remains

  @behaviour:COMP-GENERATE-NAME @behaviour:COMP-OWNED
  Scenario: A Job named by generateName is created once and its generated name is recorded
    Given an AppWrapper "generated" with the components:
      """
      - template:
          apiVersion: batch/v1
          kind: Job
          metadata:
            generateName: generated-job-
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
    Then it reaches phase Running within 60 seconds
    And 1 pod of it is Running within 60 seconds
    # A change of a live annotation makes every controller reconcile it again (FT-ANNOTATIONS-LIVE); a controller that does not find its component by the recorded name creates
    # another under a new generated name.
    When its annotation "retryLimit" is set to "7"
    Then exactly 1 Job is ever seen in the namespace over 8 seconds
    And it is in phase Running
    And it matches:
      """
      status:
        componentStatus:
        - kind: Job
          conditions: [{type: ResourcesDeployed, status: "True", reason: ComponentCreatedSuccessfully}]
      """
    And its wrapped Job matches:
      """
      metadata:
        name: '$regex:^generated-job-[a-z0-9]+$'
        generateName: generated-job-
        ownerReferences:
        - {kind: AppWrapper, name: generated, controller: true}
      """
    When it is deleted
    Then it is gone within 30 seconds
    And no pod of it remains
