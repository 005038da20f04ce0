//! The services' Kubernetes manifests (`k8s/<service>.yaml`, built into this program),
//! read as the kubelet reads them: each Deployment's container arguments, environment
//! and mounted volumes. The replica run starts every process from these, so what runs
//! here is what the manifests deploy.

use anyhow::{Context, anyhow, bail};
use yaml_rust2::{Yaml, YamlLoader};

/// Each service's manifest: (service = Deployment and binary name, YAML text).
pub const MANIFESTS: [(&str, &str); 5] = [
    (
        "waiting-room",
        include_str!("../../../../k8s/waiting-room.yaml"),
    ),
    ("seat-map", include_str!("../../../../k8s/seat-map.yaml")),
    ("holds", include_str!("../../../../k8s/holds.yaml")),
    ("payments", include_str!("../../../../k8s/payments.yaml")),
    (
        "box-office",
        include_str!("../../../../k8s/box-office.yaml"),
    ),
];

/// A Secret or a ConfigMap, by name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ObjectRef {
    /// A Secret.
    Secret(String),
    /// A ConfigMap.
    ConfigMap(String),
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Secret(name) => write!(f, "Secret {name}"),
            Self::ConfigMap(name) => write!(f, "ConfigMap {name}"),
        }
    }
}

/// Where an environment variable's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    /// `value:` in the manifest.
    Literal(String),
    /// `valueFrom:` a key of a Secret or ConfigMap; with `optional: true` (the third
    /// field) the variable is left unset when the key is absent.
    From(ObjectRef, String, bool),
}

/// A volume mounted into the container: every key of the object becomes a file named
/// after it under `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The volume's name in the Pod.
    pub volume: String,
    /// Where the container sees it (`/etc/stadium/tls`).
    pub path: String,
    /// What it holds.
    pub object: ObjectRef,
}

/// The one container of a service's Deployment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// The service (binary) name.
    pub service: String,
    /// Replicas the Deployment asks for.
    pub replicas: u32,
    /// Its arguments, in order.
    pub args: Vec<String>,
    /// Its environment, in order.
    pub env: Vec<(String, EnvValue)>,
    /// Its volumes.
    pub mounts: Vec<Mount>,
}

/// The container of `service`'s Deployment in its built-in manifest.
///
/// # Errors
/// An unknown service, or a manifest without the parts this reads (a Deployment named
/// after the service with one container, `value` or `valueFrom` on every variable, a
/// Secret or ConfigMap behind every mounted volume).
pub fn container(service: &str) -> anyhow::Result<Container> {
    let (_, text) = MANIFESTS
        .iter()
        .find(|(name, _)| *name == service)
        .ok_or_else(|| anyhow!("no manifest for {service}"))?;
    let docs = YamlLoader::load_from_str(text).with_context(|| format!("k8s/{service}.yaml"))?;
    let deployment = docs
        .iter()
        .find(|d| {
            d["kind"].as_str() == Some("Deployment")
                && d["metadata"]["name"].as_str() == Some(service)
        })
        .ok_or_else(|| anyhow!("k8s/{service}.yaml: no Deployment {service}"))?;
    parse(service, deployment).with_context(|| format!("k8s/{service}.yaml"))
}

fn text<'a>(yaml: &'a Yaml, what: &str) -> anyhow::Result<&'a str> {
    yaml.as_str().ok_or_else(|| anyhow!("{what}: not a string"))
}

fn parse(service: &str, deployment: &Yaml) -> anyhow::Result<Container> {
    let pod = &deployment["spec"]["template"]["spec"];
    let containers = pod["containers"]
        .as_vec()
        .ok_or_else(|| anyhow!("no containers"))?;
    let [container] = containers.as_slice() else {
        bail!("{} containers, expected one", containers.len());
    };
    let replicas = deployment["spec"]["replicas"]
        .as_i64()
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(1);
    let args = container["args"]
        .as_vec()
        .map(|args| {
            args.iter()
                .map(|a| text(a, "an argument").map(str::to_owned))
                .collect::<anyhow::Result<Vec<_>>>()
        })
        .transpose()?
        .unwrap_or_default();
    let mut env = Vec::new();
    for var in container["env"].as_vec().map(Vec::as_slice).unwrap_or(&[]) {
        let name = text(&var["name"], "an env name")?.to_owned();
        let value = if let Some(value) = var["value"].as_str() {
            EnvValue::Literal(value.to_owned())
        } else {
            let from = &var["valueFrom"];
            let (object, reference) = if !from["secretKeyRef"].is_badvalue() {
                let r = &from["secretKeyRef"];
                (ObjectRef::Secret(text(&r["name"], &name)?.to_owned()), r)
            } else if !from["configMapKeyRef"].is_badvalue() {
                let r = &from["configMapKeyRef"];
                (ObjectRef::ConfigMap(text(&r["name"], &name)?.to_owned()), r)
            } else {
                bail!("{name}: neither value nor a Secret or ConfigMap key");
            };
            let optional = reference["optional"].as_bool().unwrap_or(false);
            EnvValue::From(object, text(&reference["key"], &name)?.to_owned(), optional)
        };
        env.push((name, value));
    }
    let volumes = pod["volumes"].as_vec().map(Vec::as_slice).unwrap_or(&[]);
    let mut mounts = Vec::new();
    for mount in container["volumeMounts"]
        .as_vec()
        .map(Vec::as_slice)
        .unwrap_or(&[])
    {
        let volume = text(&mount["name"], "a volume mount")?;
        let path = text(&mount["mountPath"], volume)?;
        let source = volumes
            .iter()
            .find(|v| v["name"].as_str() == Some(volume))
            .ok_or_else(|| anyhow!("volume {volume}: mounted but not declared"))?;
        let object = if let Some(name) = source["secret"]["secretName"].as_str() {
            ObjectRef::Secret(name.to_owned())
        } else if let Some(name) = source["configMap"]["name"].as_str() {
            ObjectRef::ConfigMap(name.to_owned())
        } else {
            bail!("volume {volume}: neither a Secret nor a ConfigMap");
        };
        mounts.push(Mount {
            volume: volume.to_owned(),
            path: path.to_owned(),
            object,
        });
    }
    Ok(Container {
        service: service.to_owned(),
        replicas,
        args,
        env,
        mounts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_service_manifest() {
        for (service, _) in MANIFESTS {
            let c = container(service).unwrap();
            assert!(c.args.iter().any(|a| a == "--listen"), "{service}: {c:?}");
            assert!(
                c.mounts
                    .iter()
                    .any(|m| m.object == ObjectRef::Secret(format!("stadium-tls-{service}"))),
                "{service}: {c:?}"
            );
        }
        let holds = container("holds").unwrap();
        assert!(holds.env.contains(&(
            "DATABASE_URL".into(),
            EnvValue::From(
                ObjectRef::Secret("stadium-stores".into()),
                "database-url".into(),
                false
            )
        )));
        assert!(holds.env.contains(&(
            "DATABASE_SHARDS".into(),
            EnvValue::From(
                ObjectRef::Secret("stadium-stores".into()),
                "database-shards".into(),
                true
            )
        )));
        assert!(container("nobody").is_err());
    }
}
