//! The Secrets and ConfigMaps of a replica run: what a cluster would hold for the
//! manifests (store URLs, keys, certificates), made for this run. A manifest that asks
//! for a key the run does not make stops the run before anything starts.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, anyhow};

use super::manifest::ObjectRef;

/// Secrets and ConfigMaps by name, each a map of key to value.
#[derive(Debug, Default)]
pub struct Objects {
    objects: BTreeMap<ObjectRef, BTreeMap<String, String>>,
}

impl Objects {
    /// Sets `key` of `object` to `value`.
    pub fn insert(&mut self, object: ObjectRef, key: &str, value: impl Into<String>) {
        self.objects
            .entry(object)
            .or_default()
            .insert(key.to_owned(), value.into());
    }

    /// Whether the run makes `key` of `object`.
    pub fn has(&self, object: &ObjectRef, key: &str) -> bool {
        self.objects
            .get(object)
            .is_some_and(|keys| keys.contains_key(key))
    }

    /// The value of `key` in `object`.
    ///
    /// # Errors
    /// When the run makes no such key.
    pub fn value(&self, object: &ObjectRef, key: &str) -> anyhow::Result<&str> {
        self.objects
            .get(object)
            .and_then(|keys| keys.get(key))
            .map(String::as_str)
            .ok_or_else(|| {
                anyhow!("a manifest takes key {key} of {object}, which this run does not make")
            })
    }

    /// Writes every key of `object` as a file named after it into `dir` (created),
    /// as a mounted volume shows it; a Secret's files readable by their owner only.
    ///
    /// # Errors
    /// When the run makes no such object or a file cannot be written.
    pub fn write_volume(&self, object: &ObjectRef, dir: &Path) -> anyhow::Result<()> {
        let keys = self
            .objects
            .get(object)
            .ok_or_else(|| anyhow!("a manifest mounts {object}, which this run does not make"))?;
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        for (key, value) in keys {
            let path = dir.join(key);
            std::fs::write(&path, value).with_context(|| format!("write {}", path.display()))?;
            if matches!(object, ObjectRef::Secret(_)) {
                use std::os::unix::fs::PermissionsExt as _;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .with_context(|| format!("chmod {}", path.display()))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_key_is_named() {
        let mut objects = Objects::default();
        let stores = ObjectRef::Secret("stadium-stores".into());
        objects.insert(stores.clone(), "database-url", "postgres://x");
        assert_eq!(
            objects.value(&stores, "database-url").unwrap(),
            "postgres://x"
        );
        let error = objects.value(&stores, "redis-url").unwrap_err().to_string();
        assert!(
            error.contains("redis-url of Secret stadium-stores"),
            "{error}"
        );
        let dir = tempfile::tempdir().unwrap();
        objects.write_volume(&stores, dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("database-url")).unwrap(),
            "postgres://x"
        );
        assert!(
            objects
                .write_volume(&ObjectRef::ConfigMap("x".into()), dir.path())
                .is_err()
        );
    }
}
