//! Condition and event reasons and fixed messages (spec §2.8, §2.9).

pub const RESUMING: &str = "Resuming";
pub const SUSPENDED: &str = "Suspended";
pub const SUSPENDING: &str = "Suspending";
pub const RESETTING: &str = "Resetting";
pub const FAILED: &str = "Failed";
pub const SUCCEEDED: &str = "Succeeded";
pub const TERMINATING: &str = "Terminating";
pub const UNHEALTHY: &str = "Unhealthy";

pub const SUFFICIENT_PODS_READY: &str = "SufficientPodsReady";
pub const INSUFFICIENT_PODS_READY: &str = "InsufficientPodsReady";
pub const CREATE_FAILED: &str = "CreateFailed";
pub const MISSING_COMPONENT: &str = "MissingComponent";
pub const FAILED_COMPONENT: &str = "FailedComponent";
pub const FOUND_FAILED_PODS: &str = "FoundFailedPods";
pub const FOUND_NO_FAILED_PODS: &str = "FoundNoFailedPods";
pub const AUTOPILOT_NO_EXECUTE: &str = "AutopilotNoExecute";
pub const EXTERNALLY_SUSPENDED: &str = "ExternallySuspended";

pub const DELETION_INITIATED: &str = "DeletionInitiated";
pub const DELETION_COMPLETE: &str = "DeletionComplete";
pub const DELETION_PAUSED: &str = "DeletionPaused";

pub const COMPONENT_CREATION_INITIATED: &str = "ComponentCreationInitiated";
pub const COMPONENT_CREATION_ERRORED: &str = "ComponentCreationErrored";
pub const COMPONENT_CREATED_SUCCESSFULLY: &str = "ComponentCreatedSuccessfully";
/// Misspelled in the reference; part of the observable API.
pub const COMPONENT_DELETED: &str = "CompononetDeleted";

pub const MSG_SUSPEND_FALSE: &str = "Suspend is false";
pub const MSG_SUSPEND_TRUE: &str = "Suspend is true";
pub const MSG_RESET_COMPLETE: &str = "Reset complete; resuming";
pub const MSG_NO_RESOURCES: &str = "No resources deployed";
pub const MSG_RESET_DELETED: &str = "Resources deleted for resetting AppWrapper";
pub const MSG_FAILED_DELETED: &str = "Resources deleted for failed AppWrapper";
pub const MSG_KUEUE_FORCED_DELETION: &str =
    "Kueue forced resource deletion by suspending AppWrapper";
pub const MSG_TERMINATING_DELETED: &str = "Resources successfully deleted";
