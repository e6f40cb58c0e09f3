//! The krew manifest (plugins/krew/mcpgov.yaml): a krew Plugin that installs this
//! crate's binary under the name kubectl looks for, from the project's GitHub
//! releases, and the script that fills in a release's digests.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn krew_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/krew")
}

fn manifest(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_saphyr::from_str(&text).expect("the manifest is YAML")
}

const PLATFORMS: [(&str, &str); 4] = [
    ("linux", "amd64"),
    ("linux", "arm64"),
    ("darwin", "amd64"),
    ("darwin", "arm64"),
];

/// Everything a krew index check would look at, for `version`.
fn check(m: &Value, version: &str) {
    assert_eq!(
        m["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(m["kind"], "Plugin");
    // Krew links `kubectl-<name>` to the binary: the name is what the CLI checks for.
    assert_eq!(
        format!("kubectl-{}", m["metadata"]["name"].as_str().unwrap()),
        mcpgov::cli::PLUGIN_EXECUTABLE
    );
    let spec = &m["spec"];
    assert_eq!(spec["version"], version);
    assert!(
        spec["homepage"]
            .as_str()
            .unwrap()
            .starts_with("https://github.com/mcpgov/mcpgov")
    );
    assert!(!spec["shortDescription"].as_str().unwrap().is_empty());
    let platforms = spec["platforms"].as_array().unwrap();
    assert_eq!(platforms.len(), PLATFORMS.len());
    for (p, (os, arch)) in platforms.iter().zip(PLATFORMS) {
        assert_eq!(p["selector"]["matchLabels"]["os"], os);
        assert_eq!(p["selector"]["matchLabels"]["arch"], arch);
        let uri = p["uri"].as_str().unwrap();
        assert_eq!(
            uri,
            format!(
                "https://github.com/mcpgov/mcpgov/releases/download/{version}/mcpgov-{version}-{os}-{arch}.tar.gz"
            )
        );
        let sha = p["sha256"].as_str().unwrap();
        assert!(
            sha.len() == 64 && sha.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')),
            "{sha}"
        );
        // The archive's binary is what krew links as kubectl-mcpgov.
        assert_eq!(p["bin"], "mcpgov");
        let files = p["files"].as_array().unwrap();
        assert!(
            files
                .iter()
                .any(|f| f["from"] == "mcpgov" && f["to"] == "."),
            "{files:?}"
        );
    }
}

#[test]
fn the_manifest_installs_this_version_as_kubectl_mcpgov() {
    let m = manifest(&krew_dir().join("mcpgov.yaml"));
    check(&m, &format!("v{}", env!("CARGO_PKG_VERSION")));
}

#[test]
fn update_fills_in_a_release_and_its_digests() {
    let dir = std::env::temp_dir().join(format!("mcpgov-krew-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("mcpgov.yaml");
    std::fs::copy(krew_dir().join("mcpgov.yaml"), &copy).unwrap();
    let version = "v9.8.7";
    let mut digests = Vec::new();
    for (os, arch) in PLATFORMS {
        let bytes = format!("archive for {os}/{arch}");
        std::fs::write(
            dir.join(format!("mcpgov-{version}-{os}-{arch}.tar.gz")),
            &bytes,
        )
        .unwrap();
        let d = mcpgov_engine::canonical::sha256_hex(bytes.as_bytes());
        digests.push(d.trim_start_matches("sha256:").to_string());
    }
    let run = |v: &str| {
        Command::new("bash")
            .arg(krew_dir().join("update.sh"))
            .args([v, dir.to_str().unwrap()])
            .env("MANIFEST", &copy)
            .output()
            .unwrap()
    };
    let o = run(version);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = manifest(&copy);
    check(&m, version);
    let got: Vec<&str> = m["spec"]["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["sha256"].as_str().unwrap())
        .collect();
    assert_eq!(got, digests);
    // A missing archive or a malformed version fails, and leaves the file alone.
    let before = std::fs::read_to_string(&copy).unwrap();
    assert!(!run("v0.0.1").status.success());
    assert!(!run("latest").status.success());
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), before);
    let _ = std::fs::remove_dir_all(&dir);
}
