//! The operator's namespace, found as the reference finds it: `$NAMESPACE`, else the namespace
//! of the pod's service account.

pub const SERVICE_ACCOUNT_NAMESPACE: &str =
    "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

/// The operator's namespace from this process's environment, if it has one.
pub fn operator_namespace() -> Option<String> {
    choose(
        std::env::var("NAMESPACE").ok(),
        std::fs::read_to_string(SERVICE_ACCOUNT_NAMESPACE).ok(),
    )
}

/// A non-empty variable as it is, else the file's trimmed contents if any.
pub fn choose(variable: Option<String>, file: Option<String>) -> Option<String> {
    variable.filter(|ns| !ns.is_empty()).or_else(|| {
        file.map(|ns| ns.trim().to_owned())
            .filter(|ns| !ns.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case::the_variable_first(Some("from-env"), Some("from-file"), Some("from-env"))]
    #[case::an_empty_variable_is_unset(Some(""), Some("from-file\n"), Some("from-file"))]
    #[case::the_file_trimmed(None, Some(" from-file\n"), Some("from-file"))]
    #[case::a_blank_file_is_none(None, Some(" \n"), None)]
    #[case::neither(None, None, None)]
    fn the_variable_wins_over_the_service_account(
        #[case] variable: Option<&str>,
        #[case] file: Option<&str>,
        #[case] expected: Option<&str>,
    ) {
        let found = choose(variable.map(Into::into), file.map(Into::into));
        assert_eq!(found.as_deref(), expected);
    }
}
