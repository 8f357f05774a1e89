//! The fake cluster's Nodes: as a kubelet reports them, each about 5 KiB of JSON (its labels,
//! conditions, addresses and the images it holds), so that the controller's watch of Nodes
//! decodes what a real cluster sends and keeps what it keeps.

use serde_json::{Value, json};

/// Node `i` of a cluster whose nodes are spread over four pools.
pub fn node(i: usize, created: &str) -> Value {
    let name = format!("ip-10-0-{}-{}.eu-west-1.compute.internal", i / 250, i % 250);
    let pool = ["general", "general", "memory", "gpu"][i % 4];
    let mut allocatable = json!({
        "cpu": "3920m", "memory": "15896156Ki", "ephemeral-storage": "95551679124",
        "hugepages-1Gi": "0", "hugepages-2Mi": "0", "pods": "58",
    });
    if pool == "gpu" {
        allocatable["nvidia.com/gpu"] = json!("1");
    }
    let condition = |kind: &str, status: &str, reason: &str| {
        json!({
            "type": kind, "status": status, "reason": reason,
            "message": format!("kubelet reports {kind} is {status}"),
            "lastHeartbeatTime": created, "lastTransitionTime": created,
        })
    };
    let images: Vec<Value> = (0..25)
        .map(|k| {
            json!({
                "names": [
                    format!("registry.example.com/team-{k}/service@sha256:{:064x}", k * 7919 + i),
                    format!("registry.example.com/team-{k}/service:v1.{k}.{i}"),
                ],
                "sizeBytes": 50_000_000 + k * 1_000_003,
            })
        })
        .collect();
    json!({
        "kind": "Node", "apiVersion": "v1",
        "metadata": {
            "name": name, "uid": format!("7d1be0e5-0000-4000-8000-{i:012}"),
            "resourceVersion": "1", "creationTimestamp": created,
            "labels": {
                "beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/instance-type": "m6i.xlarge",
                "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "node.kubernetes.io/instance-type": "m6i.xlarge",
                "topology.kubernetes.io/region": "eu-west-1",
                "topology.kubernetes.io/zone": format!("eu-west-1{}", ["a", "b", "c"][i % 3]),
                "karpenter.sh/nodepool": pool, "karpenter.sh/capacity-type": "on-demand",
            },
            "annotations": {
                "alpha.kubernetes.io/provided-node-ip": format!("10.0.{}.{}", i / 250, i % 250),
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": { "providerID": format!("aws:///eu-west-1a/i-{i:017x}") },
        "status": {
            "capacity": allocatable, "allocatable": allocatable,
            "conditions": [
                condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                condition("PIDPressure", "False", "KubeletHasSufficientPID"),
                condition("Ready", "True", "KubeletReady"),
            ],
            "addresses": [
                { "type": "InternalIP", "address": format!("10.0.{}.{}", i / 250, i % 250) },
                { "type": "Hostname", "address": name },
                { "type": "InternalDNS", "address": name },
            ],
            "daemonEndpoints": { "kubeletEndpoint": { "Port": 10250 } },
            "nodeInfo": {
                "machineID": format!("{i:032x}"), "systemUUID": format!("ec2{i:029x}"),
                "bootID": format!("{:032x}", i * 31), "kernelVersion": "6.1.112-124.190.amzn2023.x86_64",
                "osImage": "Amazon Linux 2023.6.20241031", "containerRuntimeVersion": "containerd://1.7.22",
                "kubeletVersion": "v1.31.2-eks-94953ac", "kubeProxyVersion": "v1.31.2-eks-94953ac",
                "operatingSystem": "linux", "architecture": "amd64",
            },
            "images": images,
        },
    })
}
