//! The Kubernetes manifests against the binaries they run. For every container of a
//! stadium image: each variable it sets is one its binary reads, each flag it passes
//! exists, every required flag is given, and the whole configuration is one production
//! mode accepts (no generated key, development issuer or simulated provider; TLS files
//! given, from mounted volumes). Every
//! Deployment has a Service, a PodDisruptionBudget, probes and resources; every
//! pre-scale ScaledObject takes over an HPA that exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};
use stadium_kit::mode::Convenience;
use yaml_rust2::{Yaml, YamlLoader};

fn k8s() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../k8s")
}

/// Every document of the `.yaml` files directly in `dir`, with the file it came from.
fn documents(dir: &Path) -> Vec<(String, Yaml)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no manifests in {}", dir.display());
    let mut out = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for doc in YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}")) {
            out.push((name.clone(), doc));
        }
    }
    out
}

fn named<'a>(docs: &'a [(String, Yaml)], kind: &str) -> BTreeSet<&'a str> {
    docs.iter()
        .filter(|(_, d)| d["kind"].as_str() == Some(kind))
        .filter_map(|(_, d)| d["metadata"]["name"].as_str())
        .collect()
}

fn command_of(binary: &str) -> clap::Command {
    match binary {
        "waiting-room" => waiting_room::config::Config::command(),
        "seat-map" => seat_map::Config::command(),
        "holds" => holds::Config::command(),
        "payments" => payments::Config::command(),
        "box-office" => box_office::Config::command(),
        other => panic!("no binary {other}"),
    }
}

/// What production mode would refuse in a configuration given as `argv`.
fn refused_in_production(binary: &str, argv: &[String]) -> Vec<Convenience> {
    fn parsed<C: Parser>(argv: &[String]) -> C {
        C::try_parse_from(argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"))
    }
    match binary {
        "waiting-room" => parsed::<waiting_room::config::Config>(argv).conveniences(),
        "seat-map" => parsed::<seat_map::Config>(argv).conveniences(),
        "holds" => parsed::<holds::Config>(argv).conveniences(),
        "payments" => parsed::<payments::Config>(argv).conveniences(),
        "box-office" => parsed::<box_office::Config>(argv).conveniences(),
        other => panic!("no binary {other}"),
    }
}

/// A stand-in for a value a manifest takes from a Secret or ConfigMap.
fn stand_in(variable: &str) -> String {
    if variable == "DATABASE_SHARDS" {
        return "stand-in=postgres://stand-in:5432/stand-in".to_owned();
    }
    if variable.ends_with("_URL") && !variable.starts_with("DATABASE") && variable != "REDIS_URL" {
        "https://stand-in:1".to_owned()
    } else {
        format!("stand-in-{}", variable.to_lowercase())
    }
}

fn strings(yaml: &Yaml) -> Vec<String> {
    yaml.as_vec()
        .map(|v| {
            v.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Checks one container of `binary`; returns what is wrong with it.
fn check_container(file: &str, binary: &str, container: &Yaml) -> Vec<String> {
    let command = command_of(binary);
    let mut wrong = Vec::new();
    let args = strings(&container["args"]);
    let mut argv = vec![binary.to_owned()];
    argv.extend(args.iter().cloned());
    let mut given = BTreeSet::new();
    for flag in args.iter().filter(|a| a.starts_with("--")) {
        let long = flag.trim_start_matches("--");
        match command.get_arguments().find(|a| a.get_long() == Some(long)) {
            Some(arg) => {
                given.insert(arg.get_id().to_string());
            }
            None => wrong.push(format!("{file}: {binary} has no flag {flag}")),
        }
    }
    for var in container["env"].as_vec().into_iter().flatten() {
        let name = var["name"].as_str().unwrap_or_default();
        let value = var["value"]
            .as_str()
            .map_or_else(|| stand_in(name), str::to_owned);
        let Some(arg) = command
            .get_arguments()
            .find(|a| a.get_env().is_some_and(|e| e == name))
        else {
            wrong.push(format!("{file}: {binary} reads no variable {name}"));
            continue;
        };
        if name == "STADIUM_MODE" && value != "production" {
            wrong.push(format!("{file}: {binary} runs in {value} mode"));
        }
        given.insert(arg.get_id().to_string());
        let long = arg.get_long().expect("every flag has a long name");
        argv.push(format!("--{long}={value}"));
    }
    for arg in command.get_arguments().filter(|a| a.is_required_set()) {
        if !given.contains(arg.get_id().as_str()) {
            wrong.push(format!("{file}: {binary} needs --{}", arg.get_id()));
        }
    }
    // Production refuses plaintext: every service is given its certificate, key and
    // authority, from files its container mounts.
    for id in ["tls_cert_file", "tls_key_file", "tls_ca_file"] {
        if !given.contains(id) {
            wrong.push(format!("{file}: {binary} needs {id} (TLS)"));
        }
    }
    let mounts: Vec<&str> = container["volumeMounts"]
        .as_vec()
        .into_iter()
        .flatten()
        .filter_map(|m| m["mountPath"].as_str())
        .collect();
    for var in container["env"].as_vec().into_iter().flatten() {
        let name = var["name"].as_str().unwrap_or_default();
        let value = var["value"].as_str().unwrap_or_default();
        if name.ends_with("_URL")
            && name != "OTEL_EXPORTER_OTLP_ENDPOINT"
            && value.starts_with("http://")
        {
            wrong.push(format!("{file}: {binary} calls {value} without TLS"));
        }
        if let (true, Some(path)) = (name.ends_with("_FILE"), var["value"].as_str())
            && !mounts.iter().any(|m| path.starts_with(&format!("{m}/")))
        {
            wrong.push(format!(
                "{file}: {binary} reads {path}, which no volume mounts"
            ));
        }
    }
    if wrong.is_empty() {
        for refused in refused_in_production(binary, &argv) {
            wrong.push(format!(
                "{file}: production refuses {binary}'s {} (set {})",
                refused.what, refused.instead
            ));
        }
    }
    for key in ["readinessProbe", "livenessProbe"] {
        if container[key].is_badvalue() {
            wrong.push(format!("{file}: {binary} has no {key}"));
        }
    }
    let resources = &container["resources"];
    if resources["requests"]["cpu"].is_badvalue() || resources["limits"]["memory"].is_badvalue() {
        wrong.push(format!(
            "{file}: {binary} needs a CPU request and a memory limit"
        ));
    }
    wrong
}

#[test]
fn every_container_is_configured_as_its_binary_reads_it() {
    let docs = documents(&k8s());
    let mut wrong = Vec::new();
    let mut binaries = BTreeSet::new();
    for (file, doc) in &docs {
        if !matches!(doc["kind"].as_str(), Some("Deployment" | "StatefulSet")) {
            continue;
        }
        for container in doc["spec"]["template"]["spec"]["containers"]
            .as_vec()
            .into_iter()
            .flatten()
        {
            let image = container["image"].as_str().unwrap_or_default();
            let Some(binary) = image
                .strip_prefix("stadium/")
                .and_then(|rest| rest.split(':').next())
            else {
                continue;
            };
            binaries.insert(binary.to_owned());
            wrong.extend(check_container(file, binary, container));
        }
    }
    assert_eq!(
        binaries,
        [
            "box-office",
            "holds",
            "payments",
            "seat-map",
            "waiting-room"
        ]
        .map(str::to_owned)
        .into(),
        "one Deployment per service"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_workload_has_a_service_and_a_disruption_budget() {
    let docs = documents(&k8s());
    let services = named(&docs, "Service");
    let budgets = named(&docs, "PodDisruptionBudget");
    for kind in ["Deployment", "StatefulSet"] {
        for name in named(&docs, kind) {
            assert!(services.contains(name), "{kind} {name} has no Service");
            assert!(
                budgets.contains(name),
                "{kind} {name} has no PodDisruptionBudget"
            );
        }
    }
}

#[test]
fn the_pre_scale_takes_over_existing_autoscalers() {
    let docs = documents(&k8s());
    let deployments = named(&docs, "Deployment");
    let autoscalers = named(&docs, "HorizontalPodAutoscaler");
    let keda = documents(&k8s().join("keda"));
    assert!(!keda.is_empty());
    for (file, scaled) in &keda {
        assert_eq!(scaled["kind"].as_str(), Some("ScaledObject"), "{file}");
        let target = scaled["spec"]["scaleTargetRef"]["name"].as_str().unwrap();
        let hpa = scaled["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["name"]
            .as_str()
            .unwrap();
        assert!(
            deployments.contains(target),
            "{file}: no Deployment {target}"
        );
        assert!(
            autoscalers.contains(hpa),
            "{file}: no HPA {hpa} to take over"
        );
        let triggers: Vec<&str> = scaled["spec"]["triggers"]
            .as_vec()
            .unwrap()
            .iter()
            .filter_map(|t| t["type"].as_str())
            .collect();
        assert!(
            triggers.contains(&"cron"),
            "{file}: {target} has no cron window"
        );
    }
}
