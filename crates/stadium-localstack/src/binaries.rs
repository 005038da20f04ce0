//! Finding the server programs: `PATH` first, then Debian's versioned PostgreSQL
//! directories, because Debian keeps `initdb` and `postgres` off `PATH`.

use std::path::{Path, PathBuf};

use crate::LocalStackError;

/// Where Debian (and Ubuntu) install PostgreSQL server binaries, one directory per major
/// version: `/usr/lib/postgresql/<major>/bin`.
const DEBIAN_POSTGRES_ROOT: &str = "/usr/lib/postgresql";

/// The PostgreSQL programs a stack needs, from one installation.
#[derive(Debug, Clone)]
pub(crate) struct PostgresBinaries {
    pub(crate) initdb: PathBuf,
    pub(crate) postgres: PathBuf,
}

/// The directories searched when [`crate::LocalStackOptions::search_dirs`] is `None`:
/// every `PATH` entry in order, then `/usr/lib/postgresql/<major>/bin` for each installed
/// major version, newest first.
pub fn default_search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect())
        .unwrap_or_default();
    dirs.extend(debian_postgres_dirs(Path::new(DEBIAN_POSTGRES_ROOT)));
    dirs
}

/// `<root>/<version>/bin` for each version directory, highest version first
/// (numerically, so 17 sorts before 9.6).
fn debian_postgres_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut versions: Vec<(Vec<u32>, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let version = name
                .split('.')
                .map(str::parse)
                .collect::<Result<Vec<u32>, _>>()
                .ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort_by(|a, b| b.0.cmp(&a.0));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path)
        .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

fn searched(dirs: &[PathBuf]) -> String {
    if dirs.is_empty() {
        return "no directories".to_owned();
    }
    dirs.iter()
        .map(|dir| dir.display().to_string())
        .collect::<Vec<_>>()
        .join(":")
}

/// The first directory holding both `initdb` and `postgres`, so both come from the same
/// major version.
pub(crate) fn find_postgres(dirs: &[PathBuf]) -> Result<PostgresBinaries, LocalStackError> {
    dirs.iter()
        .map(|dir| PostgresBinaries {
            initdb: dir.join("initdb"),
            postgres: dir.join("postgres"),
        })
        .find(|bins| is_executable(&bins.initdb) && is_executable(&bins.postgres))
        .ok_or_else(|| LocalStackError::MissingBinary {
            binaries: "PostgreSQL server programs `initdb` and `postgres`",
            package: "postgresql",
            env_var: "DATABASE_URL",
            searched: searched(dirs),
        })
}

/// The first `redis-server` in `dirs`.
pub(crate) fn find_redis(dirs: &[PathBuf]) -> Result<PathBuf, LocalStackError> {
    dirs.iter()
        .map(|dir| dir.join("redis-server"))
        .find(|path| is_executable(path))
        .ok_or_else(|| LocalStackError::MissingBinary {
            binaries: "the Redis server program `redis-server`",
            package: "redis-server",
            env_var: "REDIS_URL",
            searched: searched(dirs),
        })
}

/// The first `redis-cli` in `dirs` (Debian's `redis-server` package brings it, through
/// `redis-tools`).
pub(crate) fn find_redis_cli(dirs: &[PathBuf]) -> Result<PathBuf, LocalStackError> {
    dirs.iter()
        .map(|dir| dir.join("redis-cli"))
        .find(|path| is_executable(path))
        .ok_or_else(|| LocalStackError::MissingBinary {
            binaries: "the Redis command-line client `redis-cli` (it creates a cluster)",
            package: "redis-server",
            env_var: "REDIS_CLUSTER",
            searched: searched(dirs),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_versions_sort_newest_first_numerically() {
        let root = tempfile::tempdir().unwrap();
        for version in ["9.6", "15", "17", "not-a-version"] {
            std::fs::create_dir_all(root.path().join(version).join("bin")).unwrap();
        }
        let dirs = debian_postgres_dirs(root.path());
        let names: Vec<_> = dirs
            .iter()
            .map(|dir| dir.parent().unwrap().file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["17", "15", "9.6"]);
    }

    #[test]
    fn missing_root_gives_no_dirs() {
        assert!(debian_postgres_dirs(Path::new("/nonexistent/stadium/root")).is_empty());
    }

    #[test]
    fn postgres_needs_both_programs_in_one_directory() {
        use std::os::unix::fs::PermissionsExt as _;
        let only_initdb = tempfile::tempdir().unwrap();
        let both = tempfile::tempdir().unwrap();
        let make = |dir: &Path, name: &str| {
            let path = dir.join(name);
            std::fs::write(&path, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        };
        make(only_initdb.path(), "initdb");
        make(both.path(), "initdb");
        make(both.path(), "postgres");
        let dirs = [only_initdb.path().to_path_buf(), both.path().to_path_buf()];
        let found = find_postgres(&dirs).unwrap();
        assert_eq!(found.initdb, both.path().join("initdb"));
        assert_eq!(found.postgres, both.path().join("postgres"));
    }

    #[test]
    fn non_executable_files_do_not_count() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("redis-server"), "").unwrap();
        let error = find_redis(&[dir.path().to_path_buf()]).unwrap_err();
        assert!(error.to_string().contains("`redis-server`"), "{error}");
    }
}
