//! With no `--kubeconfig`, an existing cluster is reached as kubectl reaches it: through the
//! files `KUBECONFIG` lists, merged, and their current context. Alone in its test binary,
//! because it sets `KUBECONFIG` for the whole process.

use clusters::{Cluster, ExistingCluster};
use kube::config::Kubeconfig;

#[tokio::test]
async fn the_files_kubeconfig_lists_are_merged_and_their_current_context_used() {
    let dir = tempfile::tempdir().unwrap();
    let server = clusters::testing::version_server().await;
    let users = dir.path().join("users.yaml");
    std::fs::write(
        &users,
        "apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user: {token: t}\n\
         current-context: mine\n",
    )
    .unwrap();
    let clusters = dir.path().join("clusters.yaml");
    std::fs::write(
        &clusters,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {{server: '{server}'}}\n\
             contexts:\n- name: mine\n  context: {{cluster: c, user: u}}\n- name: other\n  \
             context: {{cluster: nowhere, user: u}}\n"
        ),
    )
    .unwrap();
    let list = std::env::join_paths([&users, &clusters]).unwrap();
    // SAFETY: the only test of this binary, so no other thread reads the environment.
    unsafe { std::env::set_var("KUBECONFIG", &list) };

    let cluster = ExistingCluster::connect(None, None).await.unwrap();
    assert_eq!(cluster.name(), "mine");
    let copy = Kubeconfig::read_from(cluster.kubeconfig()).unwrap();
    assert_eq!(copy.contexts.len(), 1);
    assert_eq!(copy.auth_infos[0].name, "u");

    let err = ExistingCluster::connect(None, Some("gone".into()))
        .await
        .err()
        .unwrap()
        .to_string();
    let want = format!("kubeconfig KUBECONFIG ({})", list.to_string_lossy());
    assert!(err.starts_with(&want), "{err}");
}
