//! The files of a real node: containerd's config, the CNI network, the kubelet's and
//! kube-proxy's configurations and kubeconfigs. Every path is under the node's directory, so
//! nothing is written to the system's own containerd, CNI or kubelet locations.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// Where Debian's `containernetworking-plugins` puts the plugins.
pub const CNI_BIN_DIR: &str = "/usr/lib/cni";
/// The pods' bridge; one real node per machine, so one name.
pub const BRIDGE: &str = "awconf0";
/// Pod addresses: private, and apart from Docker's 172.17/16, kind's 10.244/16, KWOK's fake
/// 10.244/16 and the Service range 10.96/16.
pub const POD_SUBNET: &str = "10.123.0.0/16";
/// A PATH with the sbin directories, where Debian puts runc and iptables.
pub const NODE_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// Label and taint of a real node: pods land there only when they ask to, so a real node does
/// not change where the fake nodes' workloads go.
pub const REAL_NODE_LABEL: (&str, &str) = ("awconf.dev/node", "real");
pub const REAL_NODE_TAINT: &str = "awconf.dev/real-node";

/// The paths of one real node, all under `dir`.
#[derive(Clone, Debug)]
pub struct NodePaths {
    pub dir: PathBuf,
}

impl NodePaths {
    pub fn new(work_dir: &Path) -> Self {
        Self {
            dir: work_dir.join("node"),
        }
    }
    pub fn containerd_config(&self) -> PathBuf {
        self.dir.join("containerd.toml")
    }
    pub fn containerd_root(&self) -> PathBuf {
        self.dir.join("containerd/root")
    }
    pub fn containerd_state(&self) -> PathBuf {
        self.dir.join("containerd/state")
    }
    pub fn containerd_socket(&self) -> PathBuf {
        self.dir.join("containerd/containerd.sock")
    }
    pub fn cni_conf_dir(&self) -> PathBuf {
        self.dir.join("cni/net.d")
    }
    pub fn cni_ipam_dir(&self) -> PathBuf {
        self.dir.join("cni/ipam")
    }
    pub fn kubelet_root(&self) -> PathBuf {
        self.dir.join("kubelet")
    }
    pub fn kubelet_config(&self) -> PathBuf {
        self.dir.join("kubelet.yaml")
    }
    pub fn kubelet_kubeconfig(&self) -> PathBuf {
        self.dir.join("kubelet-kubeconfig.yaml")
    }
    pub fn kube_proxy_config(&self) -> PathBuf {
        self.dir.join("kube-proxy.yaml")
    }
    pub fn kube_proxy_kubeconfig(&self) -> PathBuf {
        self.dir.join("kube-proxy-kubeconfig.yaml")
    }
    pub fn pod_logs(&self) -> PathBuf {
        self.dir.join("pod-logs")
    }
    pub fn images(&self) -> PathBuf {
        self.dir.join("images")
    }
    pub fn pki(&self) -> PathBuf {
        self.dir.join("pki")
    }
    /// The kernel settings as they were before the node started.
    pub fn sysctls(&self) -> PathBuf {
        self.dir.join("sysctls.json")
    }
    /// Directories to create before anything starts.
    pub fn dirs(&self) -> Vec<PathBuf> {
        vec![
            self.containerd_root(),
            self.containerd_state(),
            self.cni_conf_dir(),
            self.cni_ipam_dir(),
            self.kubelet_root(),
            self.pod_logs(),
            self.images(),
            self.pki(),
            self.dir.join("opt"),
            self.dir.join("volume-plugins"),
        ]
    }
}

/// Ports of the node's own endpoints (the kubelet serves on the node IP, the rest on loopback).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodePorts {
    pub kubelet: u16,
    pub kubelet_healthz: u16,
    pub kube_proxy_healthz: u16,
    pub kube_proxy_metrics: u16,
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// containerd (config version 2) with its own root, state and socket. The CRI plugin keeps
/// `oom_score_adj` no lower than its own (lowering it needs CAP_SYS_RESOURCE, which this kind
/// of machine lacks: without that every sandbox fails with "can't get final child's PID from
/// pipe"), mounts network namespaces under its state directory, and serves streams on a free
/// loopback port.
pub fn containerd(paths: &NodePaths, runc: &Path, sandbox_image: &str) -> String {
    format!(
        r#"version = 2
root = "{root}"
state = "{state}"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs", "io.containerd.tracing.processor.v1.otlp"]

[grpc]
  address = "{socket}"

[ttrpc]
  address = "{socket}.ttrpc"

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = "{opt}"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{sandbox_image}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  disable_apparmor = true
  tolerate_missing_hugetlb_controller = true

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
  BinaryName = "{runc}"
  SystemdCgroup = false

[plugins."io.containerd.grpc.v1.cri".cni]
  bin_dir = "{CNI_BIN_DIR}"
  conf_dir = "{conf_dir}"
  max_conf_num = 1
"#,
        root = p(&paths.containerd_root()),
        state = p(&paths.containerd_state()),
        socket = p(&paths.containerd_socket()),
        opt = p(&paths.dir.join("opt")),
        runc = p(runc),
        conf_dir = p(&paths.cni_conf_dir()),
    )
}

/// The pod network: a bridge with the gateway address, host-local addresses kept under the node
/// directory, hostPorts, and loopback. No masquerading: pods reach this machine (the API server
/// and the kubelet) through the bridge, and nothing beyond it, so no per-pod NAT rule can be
/// left behind.
pub fn cni_conflist(paths: &NodePaths) -> String {
    serde_json::json!({
        "cniVersion": "0.4.0",
        "name": "awconf",
        "plugins": [
            {
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": true,
                "ipMasq": false,
                "hairpinMode": true,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": p(&paths.cni_ipam_dir()),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": true}},
            {"type": "loopback"},
        ],
    })
    .to_string()
}

/// The kubelet: cgroupfs on cgroup v1, no QoS cgroups, its serving certificate from the
/// cluster's CA, webhook authentication and authorization against the API server, and every
/// directory under the node's own. A `tainted` node takes only pods that tolerate
/// [`REAL_NODE_TAINT`]: it shares the cluster with fake nodes that the suite's pods go to.
pub fn kubelet(
    paths: &NodePaths,
    ports: &NodePorts,
    node_ip: Ipv4Addr,
    ca: &Path,
    tainted: bool,
) -> String {
    let taints = if tainted {
        format!(
            "registerWithTaints:\n- key: \"{REAL_NODE_TAINT}\"\n  value: \"true\"\n  effect: NoSchedule\n"
        )
    } else {
        String::new()
    };
    let pki = paths.pki();
    format!(
        r#"apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: "{node_ip}"
port: {port}
readOnlyPort: 0
healthzBindAddress: "127.0.0.1"
healthzPort: {healthz}
tlsCertFile: "{cert}"
tlsPrivateKeyFile: "{key}"
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: "{ca}"
authorization:
  mode: Webhook
containerRuntimeEndpoint: "unix://{socket}"
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
cgroupsPerQOS: false
enforceNodeAllocatable: []
oomScoreAdj: 0
podLogsDir: "{pod_logs}"
volumePluginDir: "{volume_plugins}"
clusterDomain: cluster.local
syncFrequency: "{sync}"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
# Disk thresholds in bytes: a percentage of a large disk under a quota (2.5 GiB of 252) made
# the kubelet evict Kueue while builds filled the quota.
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "256Mi"
  nodefs.inodesFree: "1%"
  imagefs.available: "256Mi"
{taints}"#,
        port = ports.kubelet,
        sync = crate::providers::KUBELET_SYNC_FREQUENCY,
        healthz = ports.kubelet_healthz,
        cert = p(&pki.join("kubelet.crt")),
        key = p(&pki.join("kubelet.key")),
        ca = p(ca),
        socket = p(&paths.containerd_socket()),
        pod_logs = p(&paths.pod_logs()),
        volume_plugins = p(&paths.dir.join("volume-plugins")),
    )
}

pub fn kubelet_args(paths: &NodePaths, node_name: &str, node_ip: Ipv4Addr) -> Vec<String> {
    vec![
        format!("--config={}", p(&paths.kubelet_config())),
        format!("--kubeconfig={}", p(&paths.kubelet_kubeconfig())),
        format!("--root-dir={}", p(&paths.kubelet_root())),
        format!("--cert-dir={}", p(&paths.pki())),
        format!("--hostname-override={node_name}"),
        format!("--node-ip={node_ip}"),
        format!("--node-labels={}={}", REAL_NODE_LABEL.0, REAL_NODE_LABEL.1),
    ]
}

/// kube-proxy in iptables mode. It changes no sysctl: conntrack limits and timeouts are left
/// as they are (0), and NodePorts are not served on loopback (which needs `route_localnet`).
pub fn kube_proxy(paths: &NodePaths, ports: &NodePorts, node_name: &str) -> String {
    format!(
        r#"apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: "{kubeconfig}"
hostnameOverride: "{node_name}"
bindAddress: "127.0.0.1"
healthzBindAddress: "127.0.0.1:{healthz}"
metricsBindAddress: "127.0.0.1:{metrics}"
mode: iptables
clusterCIDR: "{POD_SUBNET}"
nodePortAddresses: ["primary"]
oomScoreAdj: 0
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
"#,
        kubeconfig = p(&paths.kube_proxy_kubeconfig()),
        healthz = ports.kube_proxy_healthz,
        metrics = ports.kube_proxy_metrics,
    )
}

pub fn kube_proxy_args(paths: &NodePaths) -> Vec<String> {
    vec![format!("--config={}", p(&paths.kube_proxy_config()))]
}

/// A kubeconfig for a node component that presents `<pki>/<identity>.crt`.
pub fn kubeconfig(server: &str, ca: &Path, pki: &Path, identity: &str) -> Result<String, String> {
    crate::kubeconfig::client_certificate(
        server,
        ca,
        identity,
        &pki.join(format!("{identity}.crt")),
        &pki.join(format!("{identity}.key")),
    )
    .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> NodePaths {
        NodePaths::new(Path::new("/w"))
    }

    const PORTS: NodePorts = NodePorts {
        kubelet: 11,
        kubelet_healthz: 12,
        kube_proxy_healthz: 13,
        kube_proxy_metrics: 14,
    };

    #[test]
    fn containerd_keeps_everything_under_the_node_directory() {
        let config = containerd(
            &paths(),
            Path::new("/usr/sbin/runc"),
            "awconf.local/pause:v1",
        );
        for needle in [
            "root = \"/w/node/containerd/root\"",
            "state = \"/w/node/containerd/state\"",
            "address = \"/w/node/containerd/containerd.sock\"",
            "path = \"/w/node/opt\"",
            "conf_dir = \"/w/node/cni/net.d\"",
            "bin_dir = \"/usr/lib/cni\"",
            "sandbox_image = \"awconf.local/pause:v1\"",
            "restrict_oom_score_adj = true",
            "netns_mounts_under_state_dir = true",
            "SystemdCgroup = false",
            "BinaryName = \"/usr/sbin/runc\"",
        ] {
            assert!(config.contains(needle), "containerd config lacks {needle}");
        }
        assert!(!config.contains("/var/lib/containerd"));
        assert!(!config.contains("/run/containerd"));
    }

    #[test]
    fn the_pod_network_is_a_private_bridge_without_nat() {
        let conflist: serde_json::Value = serde_json::from_str(&cni_conflist(&paths())).unwrap();
        let bridge = &conflist["plugins"][0];
        assert_eq!(bridge["type"], "bridge");
        assert_eq!(bridge["bridge"], BRIDGE);
        assert_eq!(bridge["isGateway"], true);
        assert_eq!(bridge["ipMasq"], false);
        assert_eq!(bridge["ipam"]["ranges"][0][0]["subnet"], POD_SUBNET);
        assert_eq!(bridge["ipam"]["dataDir"], "/w/node/cni/ipam");
    }

    #[test]
    fn the_kubelet_runs_on_cgroup_v1_without_systemd_and_serves_on_the_node_ip() {
        let ip = Ipv4Addr::new(192, 0, 2, 2);
        let config = kubelet(&paths(), &PORTS, ip, Path::new("/w/pki/ca.crt"), true);
        let value: serde_json::Value = serde_saphyr::from_str(&config).unwrap();
        assert_eq!(value["cgroupDriver"], "cgroupfs");
        assert_eq!(value["failCgroupV1"], false);
        assert_eq!(value["cgroupsPerQOS"], false);
        assert_eq!(value["enforceNodeAllocatable"], serde_json::json!([]));
        assert_eq!(value["address"], "192.0.2.2");
        assert_eq!(value["port"], 11);
        assert_eq!(value["readOnlyPort"], 0);
        assert_eq!(value["authentication"]["anonymous"]["enabled"], false);
        assert_eq!(value["authorization"]["mode"], "Webhook");
        assert_eq!(
            value["containerRuntimeEndpoint"],
            "unix:///w/node/containerd/containerd.sock"
        );
        assert_eq!(value["registerWithTaints"][0]["key"], REAL_NODE_TAINT);
        assert_eq!(value["evictionHard"]["nodefs.available"], "256Mi");
        assert_eq!(value["syncFrequency"], "5s");
        let alone = kubelet(&paths(), &PORTS, ip, Path::new("/w/pki/ca.crt"), false);
        let alone: serde_json::Value = serde_saphyr::from_str(&alone).unwrap();
        assert!(alone.get("registerWithTaints").is_none(), "{alone}");
        let args = kubelet_args(&paths(), "real-node-0", ip);
        assert!(args.contains(&"--node-ip=192.0.2.2".to_string()));
        assert!(args.contains(&"--root-dir=/w/node/kubelet".to_string()));
        assert!(args.contains(&"--hostname-override=real-node-0".to_string()));
    }

    #[test]
    fn kube_proxy_changes_no_sysctl_and_listens_on_loopback() {
        let config = kube_proxy(&paths(), &PORTS, "real-node-0");
        let value: serde_json::Value = serde_saphyr::from_str(&config).unwrap();
        assert_eq!(value["mode"], "iptables");
        assert_eq!(value["conntrack"]["maxPerCore"], 0);
        assert_eq!(value["conntrack"]["tcpEstablishedTimeout"], "0s");
        assert_eq!(value["iptables"]["localhostNodePorts"], false);
        assert_eq!(value["healthzBindAddress"], "127.0.0.1:13");
        assert_eq!(value["hostnameOverride"], "real-node-0");
    }

    #[test]
    fn node_kubeconfigs_present_their_own_identity() {
        let text = kubeconfig(
            "https://127.0.0.1:6443",
            Path::new("/w/pki/ca.crt"),
            Path::new("/w/node/pki"),
            "kube-proxy",
        )
        .unwrap();
        let config = kube::config::Kubeconfig::from_yaml(&text).unwrap();
        let user = config.auth_infos[0].auth_info.clone().unwrap();
        assert_eq!(config.auth_infos[0].name, "kube-proxy");
        assert_eq!(
            user.client_certificate.as_deref(),
            Some("/w/node/pki/kube-proxy.crt")
        );
        let cluster = config.clusters[0].cluster.clone().unwrap();
        assert_eq!(cluster.server.as_deref(), Some("https://127.0.0.1:6443"));
    }
}
