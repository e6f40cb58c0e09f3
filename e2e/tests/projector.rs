//! mcpgov-projector against the real API server: the directory it keeps is the one the
//! kubelet keeps for a ConfigMap volume (it runs the kubelet's AtomicWriter), and it
//! follows the ConfigMap through updates, key removals and deletion.

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use mcpgov_e2e::{Projector, client, namespace};
use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A volume directory that does not exist yet (the projector creates it, as the
/// kubelet's emptyDir wrapper does); removed on drop, pass or fail.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(test: &str) -> ScratchDir {
        let dir = std::env::temp_dir().join(format!(
            "mcpgov-projector-{test}-{:06x}",
            rand::random::<u32>() & 0xffffff
        ));
        assert!(!dir.exists());
        ScratchDir(dir)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config_map(name: &str, data: &[(&str, &str)], binary: &[(&str, &[u8])]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_string());
    cm.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    if !binary.is_empty() {
        cm.binary_data = Some(
            binary
                .iter()
                .map(|(k, v)| (k.to_string(), ByteString(v.to_vec())))
                .collect(),
        );
    }
    cm
}

fn rv(cm: &ConfigMap) -> String {
    cm.metadata
        .resource_version
        .clone()
        .expect("resourceVersion")
}

async fn merge(api: &Api<ConfigMap>, name: &str, patch: serde_json::Value) -> String {
    let cm = api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch ConfigMap");
    rv(&cm)
}

/// Entries of the volume directory, each with its symlink target if it is one.
fn entries(dir: &Path) -> BTreeMap<String, Option<String>> {
    std::fs::read_dir(dir)
        .expect("read volume dir")
        .map(|e| {
            let e = e.unwrap();
            let target = std::fs::read_link(e.path())
                .ok()
                .map(|t| t.to_string_lossy().into_owned());
            (e.file_name().to_string_lossy().into_owned(), target)
        })
        .collect()
}

/// `..2026_12_01_13_57_42.3645025359`: the AtomicWriter's timestamped directory name.
fn is_timestamp_dir(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("..") else {
        return false;
    };
    let Some((stamp, suffix)) = rest.split_once('.') else {
        return false;
    };
    let parts: Vec<&str> = stamp.split('_').collect();
    parts.len() == 6
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && !suffix.is_empty()
        && suffix.bytes().all(|b| b.is_ascii_digit())
}

/// The kubelet's layout for `keys`: `..data -> <timestamped dir>`, that directory, and
/// `key -> ..data/key` for each key, nothing else. Returns the timestamped directory.
fn assert_kubelet_layout(dir: &Path, keys: &[&str]) -> String {
    let got = entries(dir);
    let data = got
        .get("..data")
        .cloned()
        .flatten()
        .unwrap_or_else(|| panic!("..data is not a symlink: {got:?}"));
    assert!(is_timestamp_dir(&data), "..data -> {data}");
    let mut want: BTreeMap<String, Option<String>> = keys
        .iter()
        .map(|k| (k.to_string(), Some(format!("..data/{k}"))))
        .collect();
    want.insert("..data".into(), Some(data.clone()));
    want.insert(data.clone(), None);
    assert_eq!(got, want, "volume directory layout");
    // The real files: exactly the keys, regular files, mode 0644.
    let ts = dir.join(&data);
    assert!(std::fs::symlink_metadata(&ts).unwrap().is_dir());
    let files: BTreeSet<String> = std::fs::read_dir(&ts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, keys.iter().map(|k| k.to_string()).collect());
    for k in keys {
        let meta = std::fs::symlink_metadata(ts.join(k)).unwrap();
        assert!(meta.is_file(), "{k} is a regular file");
        assert_eq!(meta.permissions().mode() & 0o7777, 0o644, "mode of {k}");
    }
    data
}

fn read(dir: &Path, key: &str) -> Vec<u8> {
    std::fs::read(dir.join(key)).unwrap_or_else(|e| panic!("read {key}: {e}"))
}

#[tokio::test]
async fn projects_like_the_kubelet_through_updates_and_deletion() {
    let client = client().await;
    let ns = namespace(&client, "projector").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let scratch = ScratchDir::new("lifecycle");
    let dir = scratch.0.clone();
    let binary: &[u8] = &[0, 159, 146, 150, 255];

    let cm = api
        .create(
            &PostParams::default(),
            &config_map(
                "bundle",
                &[("policy.json", "{\"v\":1}"), ("extra", "x")],
                &[("blob", binary)],
            ),
        )
        .await
        .expect("create ConfigMap");
    let projector = Projector::start(&ns, "bundle", &dir).await;
    let first = projector.wait_for_projection(&rv(&cm)).await;
    assert_eq!(first.keys, ["blob", "extra", "policy.json"]);
    let data1 = assert_kubelet_layout(&dir, &["blob", "extra", "policy.json"]);
    assert_eq!(first.data, data1);
    assert_eq!(read(&dir, "policy.json"), b"{\"v\":1}");
    assert_eq!(read(&dir, "blob"), binary, "binaryData byte for byte");

    // New content: a new timestamped directory behind `..data`, the old one removed.
    let rv2 = merge(
        &api,
        "bundle",
        serde_json::json!({"data": {"policy.json": "{\"v\":2}"}}),
    )
    .await;
    let second = projector.wait_for_projection(&rv2).await;
    let data2 = assert_kubelet_layout(&dir, &["blob", "extra", "policy.json"]);
    assert_eq!(second.data, data2);
    assert_ne!(data2, data1, "..data swapped to a new directory");
    assert!(!dir.join(&data1).exists(), "old {data1} removed");
    assert_eq!(read(&dir, "policy.json"), b"{\"v\":2}");

    // A removed key loses its symlink; an added one gets its own.
    let rv3 = merge(
        &api,
        "bundle",
        serde_json::json!({"data": {"extra": null, "added": "y"}}),
    )
    .await;
    let third = projector.wait_for_projection(&rv3).await;
    assert_eq!(third.keys, ["added", "blob", "policy.json"]);
    let data3 = assert_kubelet_layout(&dir, &["added", "blob", "policy.json"]);
    assert!(!dir.join(&data2).exists(), "old {data2} removed");
    assert!(std::fs::symlink_metadata(dir.join("extra")).is_err());
    assert_eq!(read(&dir, "added"), b"y");

    // Same content under a new version (a label): the writer sees nothing to do and
    // leaves `..data` where it was, as the kubelet does.
    let rv4 = merge(
        &api,
        "bundle",
        serde_json::json!({"metadata": {"labels": {"touched": "yes"}}}),
    )
    .await;
    assert_eq!(projector.wait_for_projection(&rv4).await.data, data3);
    assert_kubelet_layout(&dir, &["added", "blob", "policy.json"]);

    // Deleted: the last projection stays (a non-optional volume of a running pod).
    api.delete("bundle", &DeleteParams::default())
        .await
        .expect("delete ConfigMap");
    let deleted = projector.wait_for_line("deleted ").await;
    assert!(deleted.ends_with(&format!("kept={data3}")), "{deleted}");
    assert_eq!(
        assert_kubelet_layout(&dir, &["added", "blob", "policy.json"]),
        data3
    );
    assert_eq!(read(&dir, "policy.json"), b"{\"v\":2}");

    // Re-created under the same name: projected again.
    let cm = api
        .create(
            &PostParams::default(),
            &config_map("bundle", &[("policy.json", "{\"v\":3}")], &[]),
        )
        .await
        .expect("re-create ConfigMap");
    projector.wait_for_projection(&rv(&cm)).await;
    assert_kubelet_layout(&dir, &["policy.json"]);
    assert_eq!(read(&dir, "policy.json"), b"{\"v\":3}");

    let projections = projector.projections().len();
    let status = projector.stop();
    assert!(status.success(), "SIGTERM ends it cleanly: {status:?}");
    assert_eq!(projections, 5, "one line per version");
}

/// While the ConfigMap changes, a reader that resolves `..data` once sees either the
/// old or the new content, never a mix, and `..data` never disappears.
#[tokio::test]
async fn readers_never_see_a_half_written_version() {
    let client = client().await;
    let ns = namespace(&client, "projector-swap").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let scratch = ScratchDir::new("swap");
    let dir = scratch.0.clone();
    let version = |n: u32| {
        config_map(
            "bundle",
            &[("a", &format!("{n}")), ("b", &format!("{n}"))],
            &[],
        )
    };
    let cm = api
        .create(&PostParams::default(), &version(0))
        .await
        .expect("create ConfigMap");
    let projector = Projector::start(&ns, "bundle", &dir).await;
    projector.wait_for_projection(&rv(&cm)).await;

    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (dir, done) = (dir.clone(), done.clone());
        std::thread::spawn(move || {
            let mut seen = BTreeSet::new();
            while !done.load(Ordering::Relaxed) {
                let target = std::fs::read_link(dir.join("..data"))
                    .unwrap_or_else(|e| panic!("..data vanished mid-swap: {e}"));
                // Pin the directory `..data` names now, then read both keys from it.
                let Ok(pinned) = std::fs::File::open(dir.join("..data")) else {
                    continue;
                };
                use std::os::fd::AsRawFd;
                let base = PathBuf::from(format!("/proc/self/fd/{}", pinned.as_raw_fd()));
                let (Ok(a), Ok(b)) = (
                    std::fs::read_to_string(base.join("a")),
                    std::fs::read_to_string(base.join("b")),
                ) else {
                    continue; // that version was removed after a newer one went live
                };
                assert_eq!(a, b, "mixed versions under {}", target.display());
                seen.insert(a);
            }
            seen
        })
    };
    let mut last = String::new();
    for n in 1..=20 {
        let cm = api
            .replace("bundle", &PostParams::default(), &{
                let mut v = version(n);
                v.metadata.resource_version = None;
                v
            })
            .await
            .expect("update ConfigMap");
        last = rv(&cm);
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    projector.wait_for_projection(&last).await;
    done.store(true, Ordering::Relaxed);
    let seen = reader
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    assert!(
        seen.contains("0") && seen.contains("20"),
        "reader saw {seen:?}"
    );
    assert!(seen.len() > 2, "reader saw updates go by: {seen:?}");
    assert_eq!(
        assert_kubelet_layout(&dir, &["a", "b"]),
        projector.projections().last().unwrap().data
    );
    assert_eq!(read(&dir, "a"), b"20");
    drop(projector);
}
