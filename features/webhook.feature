@webhook
Feature: Admission of AppWrappers
  The controller's webhooks, registered beside Kueue's, refuse an AppWrapper that breaks a
  creation rule and name the offending field; they refuse wrapping what the requesting user may
  not create; and they keep the components, the podSets, the user labels and spec.managedBy
  unchanged once created (the webhook area of spec/behaviours.yaml).

  @behaviour:WH-NO-PODSPECS
  Scenario: An AppWrapper without components is refused
    Given an AppWrapper "empty" with the components:
      """
      []
      """
    When I try to create it
    Then it is refused with "components contains no podspecs" at "spec.components"

  @behaviour:WH-NO-PODSPECS
  Scenario: An AppWrapper whose only component is a Service is refused
    # Upstream e2e "There must be at least one podspec (b)".
    Given an AppWrapper "service-only" wrapping a Service
    When I try to create it
    Then it is refused with "components contains no podspecs" at "spec.components"

  @behaviour:WH-AT-MOST-EIGHT
  Scenario: An AppWrapper with more than eight podspecs is refused
    Given an AppWrapper "nine" wrapping a Pod and a Pod and a Pod and a Pod and a Pod and a Pod and a Pod and a Pod and a Pod
    When I try to create it
    Then it is refused with "components contains 9 podspecs; at most 8 are allowed" at "spec.components"

  @behaviour:WH-NESTED
  Scenario: An AppWrapper wrapping an AppWrapper is refused
    Given an AppWrapper "outer" with the components:
      """
      - template:
          apiVersion: workload.codeflare.dev/v1beta2
          kind: AppWrapper
          metadata: {name: inner}
          spec: {components: []}
      """
    When I try to create it
    Then it is refused with "Nested AppWrappers are forbidden" at "spec.components[0].template"

  @behaviour:WH-OTHER-NAMESPACE
  Scenario: An AppWrapper creating an object in another namespace is refused
    Given an AppWrapper "elsewhere" with the components:
      """
      - template:
          apiVersion: v1
          kind: Pod
          metadata: {name: p, namespace: default}
          spec:
            containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is refused with "AppWrappers cannot create objects in other namespaces" at "spec.components[0].template.metadata.namespace"

  @behaviour:WH-PATH-REQUIRED
  Scenario: A podSet without a path is refused
    Given an AppWrapper "no-path" with the components:
      """
      - podSets: [{path: ""}]
        template:
          apiVersion: v1
          kind: Pod
          metadata: {name: p}
          spec:
            containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is refused with "podspec must specify path" at "spec.components[0].podSets[0].path"

  @behaviour:WH-PATH-GRAMMAR
  Scenario: A podSet path that leads nowhere is refused
    Given an AppWrapper "missing-path" with the components:
      """
      - podSets: [{path: template.spec.missing}]
        template:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: d}
          spec:
            replicas: 1
            selector: {matchLabels: {app: d}}
            template:
              metadata: {labels: {app: d}}
              spec:
                containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is refused with "path does not refer to a v1.PodSpecTemplate" at "spec.components[0].podSets[0].path"

  @behaviour:WH-PATH-POD-SPEC
  Scenario: A podSet path to something that is not a pod template is refused
    Given an AppWrapper "metadata-path" with the components:
      """
      - podSets: [{path: template.spec.template.metadata}]
        template:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: d}
          spec:
            replicas: 1
            selector: {matchLabels: {app: d}}
            template:
              metadata: {labels: {app: d}}
              spec:
                containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is refused with "does not contain a spec" at "spec.components[0].podSets[0].path"

  @behaviour:WH-PATH-GRAMMAR
  Scenario: A podSet path with an index out of bounds is refused
    Given an AppWrapper "index" with the components:
      """
      - podSets: [{path: "template.spec.templates[10]"}]
        template:
          apiVersion: example.com/v1
          kind: Thing
          metadata: {name: t}
          spec:
            templates:
              - spec:
                  containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is refused with "out of bounds index '10'" at "spec.components[0].podSets[0].path"

  @behaviour:WH-PATH-GRAMMAR
  Scenario Outline: A podSet path <what> is refused
    # WH-PATH-GRAMMAR: the path grammar's own errors. A webhook that read
    # these paths leniently would reach a container (no pod spec) or nothing at all.
    Given an AppWrapper "bad-path" with the components:
      """
      - podSets: [{path: "<path>"}]
        template:
          apiVersion: v1
          kind: Pod
          metadata: {name: p}
          spec:
            containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is refused with "<error>" at "spec.components[0].podSets[0].path"

    Examples:
      | what                            | path                          | error                                                                      |
      | with a non-numeric index        | template.spec.containers[a10] | at path position 'template.spec.containers' invalid index expression 'a10' |
      | with a negative index           | template.spec.containers[-1]  | at path position 'template.spec.containers' out of bounds index '-1'       |
      | with an unclosed bracket        | template.spec.containers[0    | at path position 'template.spec.containers' invalid array index '[0'       |
      | that does not start at template | spec.containers[0]            | first element of the path must be 'template'                               |

  @behaviour:WH-FIELD-PATH @behaviour:WH-PATH-GRAMMAR
  Scenario: A refusal names the component and the podSet at fault
    # The first component is fine (and declares a podSet of its own, so that a count over all
    # components would not land on the same index); the second one's second podSet is bad.
    Given an AppWrapper "second-bad" with the components:
      """
      - podSets: [{path: template}]
        template:
          apiVersion: v1
          kind: Pod
          metadata: {name: fine}
          spec:
            containers: [{name: c, image: busybox}]
      - podSets: [{path: template.spec.first}, {path: "template.spec.second[3]"}]
        template:
          apiVersion: example.com/v1
          kind: Thing
          metadata: {name: t}
          spec:
            first:
              spec:
                containers: [{name: c, image: busybox}]
            second:
              - spec:
                  containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is refused with "at path position 'template.spec.second' out of bounds index '3'" at "spec.components[1].podSets[1].path"

  @behaviour:WH-PATH-POD-SPEC
  Scenario: A podSet path to a template that is not a strict pod spec is refused
    Given an AppWrapper "strict" with the components:
      """
      - podSets: [{path: template.spec.template}]
        template:
          apiVersion: example.com/v1
          kind: Thing
          metadata: {name: t}
          spec:
            template:
              spec:
                containerz: []
      """
    When I try to create it
    Then it is refused with "unknown field" at "spec.components[0].podSets[0].path"

  @behaviour:WH-DECLARED-MATCH-INFERRED
  Scenario: Declared replicas that differ from the inferred ones are refused
    Given an AppWrapper "replicas" with the components:
      """
      - podSets: [{path: template.spec.template, replicas: 3}]
        template:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: d}
          spec:
            replicas: 2
            selector: {matchLabels: {app: d}}
            template:
              metadata: {labels: {app: d}}
              spec:
                containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is refused with "replica count 3 differs from inferred count 2" at "spec.components[0].podSets"

  @behaviour:WH-DUPLICATE-PATH
  Scenario: Two podSets declared at the same path are refused
    # WH-DUPLICATE-PATH, checked before (and without) any inference: the kind is unknown, so
    # nothing else would refuse these podSets.
    Given an AppWrapper "twice" with the components:
      """
      - podSets: [{path: template.spec.template}, {path: template.spec.template}]
        template:
          apiVersion: example.com/v1
          kind: Thing
          metadata: {name: t}
          spec:
            template:
              spec:
                containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is refused with "multiple DeclaredPodSets with path 'template.spec.template'" at "spec.components[0].podSets"

  @behaviour:WH-INFERENCE-FAILS
  Scenario: A template whose podSets cannot be inferred is refused
    Given an AppWrapper "bad-replicas" with the components:
      """
      - template:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: d}
          spec:
            replicas: two
            selector: {matchLabels: {app: d}}
            template:
              metadata: {labels: {app: d}}
              spec:
                containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is refused with "error inferring PodSets" at "spec.components[0].template"

  @behaviour:WH-USER-RBAC @behaviour:WH-USER-LABELS
  Scenario: A user may wrap only what the user may create
    Given a user "limited-user" who may create Pods but not Deployments
    And an AppWrapper "wraps-pod" wrapping a Pod
    When "limited-user" tries to create it
    Then it is accepted
    And it matches:
      """
      metadata:
        labels:
          workload.codeflare.dev/user: limited-user
      """
    Given an AppWrapper "wraps-deployment" wrapping a Deployment with 1 replicas
    When "limited-user" tries to create it
    Then it is refused with "User limited-user is not authorized to create deployments" at "spec.components[0].template"

  @serial
  @behaviour:WH-DEFAULT-QUEUE
  Scenario: The default queue name queues an AppWrapper that names no queue; a named queue wins
    # WH-DEFAULT-QUEUE: with defaultQueueName configured, the mutating webhook adds the
    # queue-name label on create unless the creator set one. The label hands the AppWrapper to
    # Kueue, which admits it through that LocalQueue; without the label it would not be Kueue's
    # and would get no Workload. The controller is restarted with the setting (and with the
    # run's settings after the scenario), so the scenario runs alone.
    Given the controller is configured with the default queue name "${queue}"
    And an AppWrapper "unnamed" wrapping a Pod
    When I try to create it
    Then it is accepted
    And it matches:
      """
      metadata:
        labels: {kueue.x-k8s.io/queue-name: ${queue}}
      """
    And it reaches phase Running within 30 seconds
    And its workload matches:
      """
      spec: {queueName: ${queue}}
      status:
        conditions:
        - {type: Admitted, status: "True"}
      """
    Given an AppWrapper "named" defined by:
      """
      metadata:
        labels: {kueue.x-k8s.io/queue-name: elsewhere}
      spec:
        components:
          - template:
              apiVersion: v1
              kind: Pod
              metadata: {name: p}
              spec:
                containers: [{name: c, image: busybox}]
      """
    When I try to create it
    Then it is accepted
    And it matches:
      """
      metadata:
        labels: {kueue.x-k8s.io/queue-name: elsewhere}
      """
    And its workload matches within 30 seconds:
      """
      spec: {queueName: elsewhere}
      """
    And it reaches phase Suspended within 30 seconds

  @behaviour:WH-USER-LABELS
  Scenario: The user labels name the creator, whatever the creator wrote there
    # WH-USER-LABELS: the requester's sanitized name and UID overwrite the creator's values
    # (an impersonated user has no UID). An update by someone else keeps them.
    Given a user "alice@example.com" who may create Pods but not Deployments
    And an AppWrapper "claimed" defined by:
      """
      metadata:
        labels:
          workload.codeflare.dev/user: someone-else
          workload.codeflare.dev/userid: "1234"
      spec:
        components:
          - template:
              apiVersion: v1
              kind: Pod
              metadata: {name: p}
              spec:
                containers: [{name: c, image: busybox}]
      """
    When "alice@example.com" tries to create it
    Then it is accepted
    And it matches:
      """
      metadata:
        labels:
          workload.codeflare.dev/user: alice_example.com
          workload.codeflare.dev/userid: ""
      """
    When I try to set its metadata.annotations[example.com/note] to "the admin was here"
    Then it is accepted
    And it matches:
      """
      metadata:
        labels:
          workload.codeflare.dev/user: alice_example.com
          workload.codeflare.dev/userid: ""
      """

  @behaviour:WH-IMMUTABLE
  Scenario Outline: <what> cannot change once the AppWrapper exists
    Given an AppWrapper "fixed" with the components:
      """
      - podSets: [{path: template.spec.template, replicas: 2}]
        template:
          apiVersion: apps/v1
          kind: Deployment
          metadata: {name: fixed}
          spec:
            replicas: 2
            selector: {matchLabels: {app: fixed}}
            template:
              metadata: {labels: {app: fixed}}
              spec:
                containers: [{name: c, image: busybox}]
      """
    And it is created suspended outside Kueue
    When I try to set its <field> to <value>
    Then it is refused with "attempt to change immutable field" at "<refused at>"
    When I try to set its metadata.annotations[example.com/note] to "other fields may change"
    Then it is accepted

    Examples:
      | what              | field                                         | value                     | refused at                                    |
      | A template        | spec.components[0].template.spec.replicas     | 3                         | spec.components[0].template.raw               |
      | A podSet's path   | spec.components[0].podSets[0].path            | template.spec             | spec.components[0].podsets[0].path            |
      | A podSet's count  | spec.components[0].podSets[0].replicas        | 1                         | spec.components[0].podsets[0].replicas        |
      | The user label    | metadata.labels[workload.codeflare.dev/user]  | someone-else              | metadata.labels[workload.codeflare.dev/user]  |
      | The userid label  | metadata.labels[workload.codeflare.dev/userid]| "1234"                    | metadata.labels[workload.codeflare.dev/userid]|
      | spec.managedBy    | spec.managedBy                                | kueue.x-k8s.io/multikueue | spec.managedBy                                |

    Examples: counts
      | what                               | field                      | value                                                                                    | refused at                 |
      | The number of components (to none) | spec.components            | []                                                                                       | spec.components            |
      | The number of components (to two)  | spec.components            | [{template: {apiVersion: v1, kind: ConfigMap}}, {template: {apiVersion: v1, kind: Pod}}] | spec.components            |
      | The number of podSets (to none)    | spec.components[0].podSets | []                                                                                       | spec.components[0].podsets |
      | The number of podSets (to two)     | spec.components[0].podSets | [{path: template.spec.template, replicas: 2}, {path: template}]                          | spec.components[0].podsets |
