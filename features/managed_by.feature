Feature: Who drives an AppWrapper
  The controller reconciles an AppWrapper only when spec.managedBy is absent or names it
  (`workload.codeflare.dev/appwrapper-controller`); anything else is left alone: no status, no
  finalizer, no resources (KQ-MANAGED-BY-OTHER). Outside Kueue, whoever flips spec.suspend decides when
  it runs (KQ-STANDALONE).

  @behaviour:KQ-MANAGED-BY-OTHER
  Scenario: An AppWrapper managed by another controller is left alone
    Given an AppWrapper "theirs" wrapping a Pod
    And its spec.managedBy is "example.com/another-controller"
    When it is created outside Kueue
    Then it stays Empty for 5 seconds
    And it matches:
      """
      metadata:
        finalizers: $absent
      status: $absent
      """
    And no pod of it remains
    When it is deleted
    Then it is gone within 10 seconds

  @behaviour:KQ-MANAGED-BY-US @behaviour:KQ-STANDALONE
  Scenario: An AppWrapper that names this controller is reconciled
    Given an AppWrapper "ours" wrapping a Pod
    And its spec.managedBy is "workload.codeflare.dev/appwrapper-controller"
    When it is created outside Kueue
    Then it reaches phase Running within 60 seconds
    And 1 pod of it is Running within 30 seconds

  @behaviour:KQ-STANDALONE @behaviour:PH-SUSPENDED-WAITS
  Scenario: Outside Kueue, an AppWrapper created suspended waits until someone resumes it
    Given an AppWrapper "manual" wrapping a Pod
    When it is created suspended outside Kueue
    Then it reaches phase Suspended within 30 seconds
    And it stays Suspended for 3 seconds
    When its spec.suspend is set to false
    Then it reaches phase Running within 60 seconds
