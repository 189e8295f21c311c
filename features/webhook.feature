@webhook
Feature: Admission of AppWrappers
  The controller's webhooks, registered beside Kueue's, refuse an AppWrapper that breaks a
  creation rule and name the offending field; they refuse wrapping what the requesting user may
  not create; and they keep the components, the podSets, the user labels and spec.managedBy
  unchanged once created (spec §6).

  Scenario: An AppWrapper without components is refused
    Given an AppWrapper "empty" with the components:
      """
      []
      """
    When I try to create it
    Then it is refused with "components contains no podspecs" at "spec.components"

  Scenario: An AppWrapper whose only component is a Service is refused
    # Upstream e2e "There must be at least one podspec (b)".
    Given an AppWrapper "service-only" wrapping a Service
    When I try to create it
    Then it is refused with "components contains no podspecs" at "spec.components"

  Scenario: An AppWrapper with more than eight podspecs is refused
    Given an AppWrapper "nine" wrapping a Pod and a Pod and a Pod and a Pod and a Pod and a Pod and a Pod and a Pod and a Pod
    When I try to create it
    Then it is refused with "components contains 9 podspecs; at most 8 are allowed" at "spec.components"

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
