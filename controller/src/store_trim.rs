//! What the AppWrapper store keeps of each AppWrapper. Its components' templates are most of
//! an AppWrapper, and only creating a component reads them: observe builds a component from
//! its template in the phases that create (Suspended, Resuming, Resetting), and infers PodSets
//! from templates only until `status.componentStatus` holds them. Past those, the store keeps
//! the components without their templates.
//!
//! A watch event always carries the whole object, so an AppWrapper that comes back to a phase
//! that creates has its templates in the store again; a reconcile that starts in a phase past
//! them creates nothing, and a reconcile that reads the AppWrapper afresh reads it whole.

use crate::api::{AppWrapper, Phase};
use crate::podsets::component_status_initialized;

/// Drops the templates of `aw`'s components when no reconcile starting from it reads them.
pub fn drop_unread_templates(aw: &mut AppWrapper) {
    if templates_unread(aw) {
        for component in &mut aw.spec.components {
            component.template = serde_json::Value::Null;
        }
    }
}

fn templates_unread(aw: &AppWrapper) -> bool {
    let phase = aw.status.as_ref().map(|s| s.phase).unwrap_or_default();
    let past_creation = matches!(
        phase,
        Phase::Running | Phase::Suspending | Phase::Succeeded | Phase::Failed | Phase::Terminating
    );
    past_creation && component_status_initialized(aw)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn appwrapper(phase: &str, statuses: usize) -> AppWrapper {
        let template = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        let component_status: Vec<_> = (0..statuses)
            .map(|_| {
                json!({"name": "j", "kind": "Job", "apiVersion": "batch/v1",
                "podSets": [{"path": "template.spec.template", "replicas": 1}]})
            })
            .collect();
        serde_json::from_value(json!({
            "apiVersion": "workload.codeflare.dev/v1beta2", "kind": "AppWrapper",
            "metadata": {"name": "a", "namespace": "n"},
            "spec": {"components": [{"template": template}]},
            "status": {"phase": phase, "componentStatus": component_status}
        }))
        .unwrap()
    }

    #[rstest::rstest]
    #[case::new("", 0, false)]
    #[case::suspended("Suspended", 1, false)]
    #[case::resuming("Resuming", 1, false)]
    #[case::resetting("Resetting", 1, false)]
    #[case::running("Running", 1, true)]
    #[case::suspending("Suspending", 1, true)]
    #[case::succeeded("Succeeded", 1, true)]
    #[case::failed("Failed", 1, true)]
    #[case::terminating("Terminating", 1, true)]
    #[case::running_without_component_status("Running", 0, false)]
    #[case::a_phase_of_another_controller("Paused", 1, false)]
    fn templates_are_dropped_only_where_no_reconcile_reads_them(
        #[case] phase: &str,
        #[case] statuses: usize,
        #[case] dropped: bool,
    ) {
        let mut aw = appwrapper(phase, statuses);
        drop_unread_templates(&mut aw);
        assert_eq!(aw.spec.components.len(), 1);
        assert_eq!(aw.spec.components[0].template.is_null(), dropped);
    }
}
