//! Command lines of the control-plane components, one function per component.

use std::net::Ipv4Addr;
use std::path::Path;

use crate::nodes::KWOK_NODE_ANNOTATION;

/// Who must reach the API server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reach {
    /// Only this machine's processes (the KWOK-only cluster): loopback.
    Loopback,
    /// Also a real node: its kubelet authenticates as a node, the API server calls the kubelet
    /// back on the node IP, and pods reach the API server through the `kubernetes` Service,
    /// whose endpoint is the advertise address — this machine's own, since a pod's loopback
    /// is its own.
    RealNode(Ipv4Addr),
    /// Also programs in a network namespace of this machine (see [`crate::netns`]), at the
    /// host's end of its link.
    Namespace(Ipv4Addr),
}

/// Ports of one local cluster, all on 127.0.0.1.
#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
pub struct Ports {
    pub etcd: u16,
    pub etcd_peer: u16,
    pub apiserver: u16,
    pub controller_manager: u16,
    pub scheduler: u16,
    pub kwok: u16,
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

pub fn etcd(w: &Path, ports: &Ports) -> Vec<String> {
    let client = format!("http://127.0.0.1:{}", ports.etcd);
    let peer = format!("http://127.0.0.1:{}", ports.etcd_peer);
    vec![
        "--name=node0".into(),
        format!("--data-dir={}", p(&w.join("etcd"))),
        format!("--listen-client-urls={client}"),
        format!("--advertise-client-urls={client}"),
        format!("--listen-peer-urls={peer}"),
        format!("--initial-advertise-peer-urls={peer}"),
        format!("--initial-cluster=node0={peer}"),
        "--unsafe-no-fsync=true".into(),
        "--auto-compaction-retention=1".into(),
        "--quota-backend-bytes=2147483648".into(),
        "--log-level=warn".into(),
    ]
}

/// The common name of the aggregation layer's client certificate.
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

pub fn apiserver(w: &Path, ports: &Ports, reach: Reach) -> Vec<String> {
    let pki = w.join("pki");
    let mut args = vec![
        format!("--etcd-servers=http://127.0.0.1:{}", ports.etcd),
        "--etcd-prefix=/registry".into(),
        // Service-referenced webhooks (the reference operator's) go to their EndpointSlices:
        // there is no kube-proxy to route a ClusterIP.
        "--enable-aggregator-routing=true".into(),
        format!("--secure-port={}", ports.apiserver),
        format!("--tls-cert-file={}", p(&pki.join("apiserver.crt"))),
        format!("--tls-private-key-file={}", p(&pki.join("apiserver.key"))),
        format!("--client-ca-file={}", p(&pki.join("ca.crt"))),
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
        format!("--service-account-key-file={}", p(&pki.join("sa.pub"))),
        format!(
            "--service-account-signing-key-file={}",
            p(&pki.join("sa.key"))
        ),
        "--service-cluster-ip-range=10.96.0.0/16".into(),
        "--allow-privileged=true".into(),
        "--enable-priority-and-fairness=false".into(),
        // /debug/pprof, for the admin only: where a bench run's API-server time goes.
        "--profiling=true".into(),
        // The aggregation layer identifies itself to extension API servers (Kueue's
        // visibility server) with this client certificate; without it they answer 403, their
        // APIService is unavailable, and namespace deletion hangs on stale discovery.
        format!(
            "--proxy-client-cert-file={}",
            p(&pki.join("front-proxy-client.crt"))
        ),
        format!(
            "--proxy-client-key-file={}",
            p(&pki.join("front-proxy-client.key"))
        ),
        format!("--requestheader-client-ca-file={}", p(&pki.join("ca.crt"))),
        format!("--requestheader-allowed-names={FRONT_PROXY_CLIENT}"),
        "--requestheader-username-headers=X-Remote-User".into(),
        "--requestheader-group-headers=X-Remote-Group".into(),
        "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
    ];
    match reach {
        Reach::Loopback | Reach::Namespace(_) => args.extend([
            match reach {
                Reach::Namespace(_) => "--bind-address=0.0.0.0".into(),
                _ => "--bind-address=127.0.0.1".into(),
            },
            "--advertise-address=127.0.0.1".into(),
            // No pod runs to reach the API server through the `kubernetes` Service, and since
            // 1.37 the endpoint reconciler refuses a loopback address.
            "--endpoint-reconciler-type=none".into(),
            "--authorization-mode=RBAC".into(),
            // No kubelet mounts tokens here; without this plugin a pod does not wait for its
            // namespace's default ServiceAccount.
            "--disable-admission-plugins=ServiceAccount".into(),
        ]),
        Reach::RealNode(ip) => args.extend([
            "--bind-address=0.0.0.0".into(),
            format!("--advertise-address={ip}"),
            "--authorization-mode=Node,RBAC".into(),
            // Pods on the real node get service-account tokens, so in-cluster clients work.
            "--enable-admission-plugins=NodeRestriction".into(),
            format!("--kubelet-client-certificate={}", p(&pki.join("admin.crt"))),
            format!("--kubelet-client-key={}", p(&pki.join("admin.key"))),
            format!("--kubelet-certificate-authority={}", p(&pki.join("ca.crt"))),
            // The node's Hostname address is its name, which no resolver knows.
            "--kubelet-preferred-address-types=InternalIP".into(),
        ]),
    }
    args
}

pub const CONTROLLERS: &str = "job-controller,garbage-collector-controller,namespace-controller,\
node-lifecycle-controller,taint-eviction-controller,pod-garbage-collector-controller,\
serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,\
ttl-after-finished-controller,replicaset-controller,deployment-controller,statefulset-controller,\
cronjob-controller,clusterrole-aggregation-controller,resourcequota-controller";

/// A real node's kube-proxy routes Services to the pods behind them.
pub const REAL_NODE_CONTROLLERS: &str = "endpointslice-controller";

pub fn controller_manager(w: &Path, ports: &Ports, reach: Reach) -> Vec<String> {
    let pki = w.join("pki");
    let controllers = match reach {
        Reach::Loopback | Reach::Namespace(_) => CONTROLLERS.to_string(),
        Reach::RealNode(_) => format!("{CONTROLLERS},{REAL_NODE_CONTROLLERS}"),
    };
    vec![
        format!("--kubeconfig={}", p(&w.join("kubeconfig.yaml"))),
        format!("--controllers={controllers}"),
        format!("--root-ca-file={}", p(&pki.join("ca.crt"))),
        format!(
            "--service-account-private-key-file={}",
            p(&pki.join("sa.key"))
        ),
        "--use-service-account-credentials=false".into(),
        "--leader-elect=false".into(),
        "--node-monitor-period=5s".into(),
        "--node-monitor-grace-period=40s".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={}", ports.controller_manager),
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics".into(),
        "--kube-api-qps=200".into(),
        "--kube-api-burst=400".into(),
        "--concurrent-job-syncs=10".into(),
        "--concurrent-gc-syncs=20".into(),
    ]
}

pub fn scheduler(w: &Path, ports: &Ports) -> Vec<String> {
    vec![
        format!("--kubeconfig={}", p(&w.join("kubeconfig.yaml"))),
        "--leader-elect=false".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--secure-port={}", ports.scheduler),
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics".into(),
        "--kube-api-qps=200".into(),
        "--kube-api-burst=400".into(),
    ]
}

pub fn kwok(w: &Path, ports: &Ports) -> Vec<String> {
    let (key, value) = KWOK_NODE_ANNOTATION;
    vec![
        format!("--kubeconfig={}", p(&w.join("kubeconfig.yaml"))),
        format!("--config={}", p(&w.join("kwok.yaml"))),
        "--manage-all-nodes=false".into(),
        format!("--manage-nodes-with-annotation-selector={key}={value}"),
        "--cidr=10.244.0.0/16".into(),
        "--node-ip=10.1.0.1".into(),
        "--node-lease-duration-seconds=40".into(),
        format!("--server-address=127.0.0.1:{}", ports.kwok),
    ]
}

/// kwok.yaml: the stages shipped with this crate. Options go on the command line: a
/// KwokConfiguration document here would replace kwok's defaults (node lease parallelism 0).
pub fn kwok_config() -> String {
    format!(
        "{}\n---\n{}",
        include_str!("../../../stages/node-stages.yaml"),
        include_str!("../../../stages/pod-stages.yaml")
    )
}

/// The admin's kubeconfig, for the harness and for the control plane's own components.
pub fn kubeconfig(w: &Path, ports: &Ports) -> Result<String, String> {
    let pki = w.join("pki");
    crate::kubeconfig::client_certificate(
        &format!("https://127.0.0.1:{}", ports.apiserver),
        &pki.join("ca.crt"),
        "admin",
        &pki.join("admin.crt"),
        &pki.join("admin.key"),
    )
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kwok_config_holds_every_stage() {
        let config = kwok_config();
        for stage in [
            "node-initialize",
            "node-heartbeat-with-lease",
            "pod-ready",
            "pod-succeed",
            "pod-fail",
            "pod-delete",
        ] {
            assert!(
                config.contains(&format!("name: {stage}\n")),
                "missing stage {stage}"
            );
        }
        assert!(!config.contains("KwokConfiguration"));
    }

    fn sample_ports() -> Ports {
        Ports {
            etcd: 1,
            etcd_peer: 2,
            apiserver: 3,
            controller_manager: 4,
            scheduler: 5,
            kwok: 6,
        }
    }

    #[test]
    fn components_listen_on_loopback_only() {
        let ports = sample_ports();
        let w = Path::new("/w");
        for args in [
            apiserver(w, &ports, Reach::Loopback),
            controller_manager(w, &ports, Reach::Loopback),
            scheduler(w, &ports),
        ] {
            assert!(args.contains(&"--bind-address=127.0.0.1".to_string()));
        }
        assert!(
            apiserver(w, &ports, Reach::Loopback)
                .contains(&"--endpoint-reconciler-type=none".to_string())
        );
        assert!(etcd(w, &ports).iter().all(|a| !a.contains("0.0.0.0")));
        assert!(kwok(w, &ports).contains(&"--server-address=127.0.0.1:6".to_string()));
    }

    #[test]
    fn with_a_real_node_the_api_server_is_reached_on_this_machine_s_address() {
        let ports = sample_ports();
        let w = Path::new("/w");
        let ip = Ipv4Addr::new(192, 0, 2, 2);
        let args = apiserver(w, &ports, Reach::RealNode(ip));
        for flag in [
            "--advertise-address=192.0.2.2",
            "--authorization-mode=Node,RBAC",
            "--kubelet-preferred-address-types=InternalIP",
            "--kubelet-certificate-authority=/w/pki/ca.crt",
            "--requestheader-allowed-names=front-proxy-client",
            "--proxy-client-cert-file=/w/pki/front-proxy-client.crt",
        ] {
            assert!(args.contains(&flag.to_string()), "{flag}");
        }
        assert!(
            !args
                .iter()
                .any(|a| a.contains("127.0.0.1") && a.starts_with("--bind"))
        );
        assert!(!args.iter().any(|a| a.contains("ServiceAccount")));
        assert_eq!(
            args.iter()
                .filter(|a| a.starts_with("--bind-address"))
                .count(),
            1
        );
        let kcm = controller_manager(w, &ports, Reach::RealNode(ip));
        assert!(kcm.iter().any(|a| a.contains("endpointslice-controller")));
        let loopback = apiserver(w, &ports, Reach::Loopback);
        assert!(loopback.contains(&"--disable-admission-plugins=ServiceAccount".to_string()));
        assert!(loopback.contains(&"--authorization-mode=RBAC".to_string()));
    }

    #[test]
    fn from_a_network_namespace_only_the_api_server_s_binding_widens() {
        let ports = sample_ports();
        let w = Path::new("/w");
        let ip = Ipv4Addr::new(10, 231, 0, 1);
        let loopback = apiserver(w, &ports, Reach::Loopback);
        let namespace = apiserver(w, &ports, Reach::Namespace(ip));
        let differ: Vec<_> = namespace.iter().filter(|a| !loopback.contains(a)).collect();
        assert_eq!(differ, ["--bind-address=0.0.0.0"]);
        assert_eq!(
            controller_manager(w, &ports, Reach::Namespace(ip)),
            controller_manager(w, &ports, Reach::Loopback)
        );
    }
}
