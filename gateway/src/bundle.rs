//! The bundle as the gateway holds it: read from a ConfigMap volume, checked, indexed by
//! server and tool, and swapped atomically (a request works on one snapshot).

use arc_swap::ArcSwapOption;
use jiff::Timestamp;
use mcpgov_core::bundle::{BundleDocument, BundleServer, BundleTool, MAX_BUNDLE_BYTES, parse};
use mcpgov_core::canonical::sha256_hex;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;

/// The ConfigMap key the operator writes the bundle under (`DATA_KEY` in the operator).
pub const BUNDLE_FILE: &str = "bundle.json";
/// Optional key beside it holding `sha256:<hex>` of the bundle bytes. The operator keeps
/// the sha in an annotation, which a volume does not project; when this key is there the
/// bytes must match it, otherwise the gateway records the sha it computed.
pub const SHA_FILE: &str = "bundle.sha256";
/// The kubelet's atomic writer points this link at the current timestamped directory.
const DATA_LINK: &str = "..data";

#[derive(Debug)]
pub struct ToolPolicy {
    pub tool: BundleTool,
    pub eligible_until: Option<Timestamp>,
    /// The tool's per-call guard, compiled once per bundle.
    pub guard: Option<mcpgov_core::percall::CompiledGuard>,
}

#[derive(Debug)]
pub struct Loaded {
    pub doc: BundleDocument,
    /// `sha256:<hex>` of the bytes read.
    pub sha: String,
    /// server key → tool name → policy.
    pub tools: HashMap<String, HashMap<String, ToolPolicy>>,
    pub servers: HashMap<String, BundleServer>,
}

impl Loaded {
    pub fn tool(&self, server: &str, name: &str) -> Option<&ToolPolicy> {
        self.tools.get(server)?.get(name)
    }

    /// What a server's tools look like to a client (decision, pin, expiry), to tell whether
    /// a swap changed what its sessions may see.
    pub fn view_of(&self, server: &str, now: Timestamp) -> Vec<(String, bool, Option<String>)> {
        let mut v: Vec<_> = self
            .tools
            .get(server)
            .map(|m| {
                m.iter()
                    .map(|(n, p)| {
                        let eligible = p.tool.decision == "eligible"
                            && p.eligible_until.is_none_or(|u| now < u);
                        (n.clone(), eligible, p.tool.contract_digest.clone())
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The servers with a tool whose `eligibleUntil` falls in `(after, until]`.
    pub fn expiring(&self, after: Timestamp, until: Timestamp) -> Vec<String> {
        self.tools
            .iter()
            .filter(|(_, m)| {
                m.values()
                    .any(|p| p.eligible_until.is_some_and(|u| after < u && u <= until))
            })
            .map(|(s, _)| s.clone())
            .collect()
    }

    /// The next instant an `eligibleUntil` passes, after `now`.
    pub fn next_expiry(&self, now: Timestamp) -> Option<(Timestamp, String)> {
        self.tools
            .iter()
            .flat_map(|(s, m)| m.values().map(move |p| (s, p)))
            .filter_map(|(s, p)| {
                p.eligible_until
                    .filter(|u| *u > now)
                    .map(|u| (u, s.clone()))
            })
            .min()
    }
}

#[derive(Debug, PartialEq, Eq)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who the bundle must have been compiled for.
#[derive(Clone, Debug)]
pub struct Expect {
    pub agent_name: String,
    pub agent_namespace: String,
}

/// Check and index a bundle's bytes.
pub fn load_bytes(
    bytes: &[u8],
    sha_file: Option<&str>,
    expect: &Expect,
) -> Result<Loaded, Invalid> {
    let sha = sha256_hex(bytes);
    if let Some(want) = sha_file {
        let want = want.trim();
        if want != sha {
            return Err(Invalid(format!(
                "{SHA_FILE} says {want:.80} but the bundle's sha256 is {sha}"
            )));
        }
    }
    let doc = parse(bytes).map_err(|e| Invalid(e.to_string()))?;
    if doc.agent.name != expect.agent_name || doc.agent.namespace != expect.agent_namespace {
        return Err(Invalid(format!(
            "bundle is for agent {}/{}, this gateway serves {}/{}",
            doc.agent.namespace, doc.agent.name, expect.agent_namespace, expect.agent_name
        )));
    }
    let mut servers = HashMap::new();
    for s in &doc.servers {
        let url = reqwest::Url::parse(&s.endpoint.url)
            .map_err(|e| Invalid(format!("server {}: url: {e}", s.key)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Invalid(format!("server {}: url is not http(s)", s.key)));
        }
        for h in &s.endpoint.headers {
            let ok_name = reqwest::header::HeaderName::from_bytes(h.name.as_bytes()).is_ok();
            let ok_ref =
                safe_segment(&h.secret_key_ref.name) && safe_segment(&h.secret_key_ref.key);
            if !ok_name || !ok_ref {
                return Err(Invalid(format!(
                    "server {}: header {:?} is not usable",
                    s.key, h.name
                )));
            }
        }
        if servers.insert(s.key.clone(), s.clone()).is_some() {
            return Err(Invalid(format!("server {} appears twice", s.key)));
        }
    }
    let mut tools: HashMap<String, HashMap<String, ToolPolicy>> = HashMap::new();
    for t in &doc.tools {
        if t.key != format!("{}::{}", t.server, t.name) {
            return Err(Invalid(format!(
                "tool key {:?} does not match its server and name",
                t.key
            )));
        }
        if !matches!(t.decision.as_str(), "eligible" | "rejected") {
            return Err(Invalid(format!(
                "tool {}: decision {:?} unknown",
                t.key, t.decision
            )));
        }
        let eligible_until = t
            .eligible_until
            .as_deref()
            .map(|u| {
                u.parse::<Timestamp>()
                    .map_err(|e| Invalid(format!("tool {}: eligibleUntil {u:?}: {e}", t.key)))
            })
            .transpose()?;
        let guard = t
            .guard
            .as_ref()
            .map(|g| {
                mcpgov_core::percall::CompiledGuard::compile(g)
                    .map_err(|e| Invalid(format!("tool {}: guard: {e}", t.key)))
            })
            .transpose()?;
        let prev = tools.entry(t.server.clone()).or_default().insert(
            t.name.clone(),
            ToolPolicy {
                tool: t.clone(),
                eligible_until,
                guard,
            },
        );
        if prev.is_some() {
            return Err(Invalid(format!("tool {} appears twice", t.key)));
        }
    }
    Ok(Loaded {
        doc,
        sha,
        tools,
        servers,
    })
}

/// A Secret name or key used as a path segment under the credentials directory.
pub fn safe_segment(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._".contains(&b))
}

/// What identifies the volume's current content without reading it: the `..data` link
/// target (kubelet volumes) or the file's length, mtime and inode (plain directories).
pub fn fingerprint(dir: &Path) -> Option<String> {
    if let Ok(t) = std::fs::read_link(dir.join(DATA_LINK)) {
        return Some(format!("link:{}", t.display()));
    }
    let m = std::fs::metadata(dir.join(BUNDLE_FILE)).ok()?;
    use std::os::unix::fs::MetadataExt;
    Some(format!(
        "file:{}:{}:{}:{}",
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ino()
    ))
}

/// Read a file of at most `max` bytes (a regular file only: a FIFO must not hang us).
fn read_bounded(path: &Path, max: usize) -> Result<Option<Vec<u8>>, Invalid> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Invalid(format!("{}: {e}", path.display()))),
    };
    if !meta.is_file() {
        return Err(Invalid(format!("{} is not a regular file", path.display())));
    }
    let f = std::fs::File::open(path).map_err(|e| Invalid(format!("{}: {e}", path.display())))?;
    let mut buf = Vec::new();
    f.take(max as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| Invalid(format!("{}: {e}", path.display())))?;
    if buf.len() > max {
        return Err(Invalid(format!("{} is over {max} bytes", path.display())));
    }
    Ok(Some(buf))
}

/// Read the bundle (and its optional sha) from one generation of the volume: through the
/// resolved `..data` target, so both files come from the same swap.
pub fn read_dir(dir: &Path, expect: &Expect) -> Result<Loaded, Invalid> {
    let base: PathBuf = match std::fs::read_link(dir.join(DATA_LINK)) {
        Ok(t) if t.is_relative() && t.components().count() == 1 => dir.join(t),
        Ok(_) => return Err(Invalid(format!("{DATA_LINK} points outside the volume"))),
        Err(_) => dir.to_path_buf(),
    };
    let bytes = read_bounded(&base.join(BUNDLE_FILE), MAX_BUNDLE_BYTES)?
        .ok_or_else(|| Invalid(format!("no {BUNDLE_FILE} in {}", dir.display())))?;
    let sha =
        read_bounded(&base.join(SHA_FILE), 128)?.map(|b| String::from_utf8_lossy(&b).into_owned());
    load_bytes(&bytes, sha.as_deref(), expect)
}

pub enum Reload {
    Unchanged,
    Swapped {
        old: Option<Arc<Loaded>>,
        new: Arc<Loaded>,
    },
    /// The new content is invalid; the last good bundle (if any) stays.
    Kept(Invalid),
    /// After an invalid read, the content is valid again and is the bundle already in
    /// force (a ConfigMap repaired to the same bytes): nothing to swap, but valid again.
    Restored,
}

/// The bundle in force. Readers take a snapshot with [`BundleStore::current`].
pub struct BundleStore {
    dir: PathBuf,
    expect: Expect,
    current: ArcSwapOption<Loaded>,
    seen: Mutex<Option<String>>,
    last_error: Mutex<Option<String>>,
}

impl BundleStore {
    pub fn new(dir: PathBuf, expect: Expect) -> Self {
        BundleStore {
            dir,
            expect,
            current: ArcSwapOption::empty(),
            seen: Mutex::new(None),
            last_error: Mutex::new(None),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn current(&self) -> Option<Arc<Loaded>> {
        self.current.load_full()
    }

    pub fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok()?.clone()
    }

    /// Re-read the volume if it changed since the last look (`force`: read anyway).
    pub fn reload(&self, force: bool) -> Reload {
        let fp = fingerprint(&self.dir);
        {
            let mut seen = self.seen.lock().expect("not poisoned");
            if !force && fp.is_some() && *seen == fp {
                return Reload::Unchanged;
            }
            *seen = fp;
        }
        match read_dir(&self.dir, &self.expect) {
            Ok(new) => {
                let was_invalid = self.last_error.lock().expect("not poisoned").take();
                let old = self.current.load_full();
                if old.as_ref().is_some_and(|o| o.sha == new.sha) {
                    return match was_invalid {
                        Some(_) => Reload::Restored,
                        None => Reload::Unchanged,
                    };
                }
                let new = Arc::new(new);
                self.current.store(Some(new.clone()));
                Reload::Swapped { old, new }
            }
            Err(e) => {
                let mut last = self.last_error.lock().expect("not poisoned");
                if last.as_deref() == Some(e.0.as_str()) && !force {
                    return Reload::Unchanged;
                }
                *last = Some(e.0.clone());
                Reload::Kept(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::os::unix::fs::symlink;

    fn expect() -> Expect {
        Expect {
            agent_name: "bot".into(),
            agent_namespace: "team".into(),
        }
    }

    fn doc(profile: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "agent": {"name": "bot", "namespace": "team"},
            "catalogDigest": "sha256:00", "defaultDecision": "deny", "governanceDigest": "sha256:00",
            "kind": "mcpgov.io/policy-bundle", "profile": profile, "schemaVersion": 2,
            "servers": [], "tools": [],
        }))
        .unwrap()
    }

    /// The kubelet's atomic writer: new timestamped dir, `..data_tmp` link, rename.
    fn swap(dir: &Path, generation: u32, files: &[(&str, &[u8])]) {
        let old = std::fs::read_link(dir.join(DATA_LINK)).ok();
        let g = format!("..gen{generation}");
        std::fs::create_dir(dir.join(&g)).unwrap();
        for (n, b) in files {
            std::fs::write(dir.join(&g).join(n), b).unwrap();
            if std::fs::symlink_metadata(dir.join(n)).is_err() {
                symlink(format!("{DATA_LINK}/{n}"), dir.join(n)).unwrap();
            }
        }
        symlink(&g, dir.join("..data_tmp")).unwrap();
        std::fs::rename(dir.join("..data_tmp"), dir.join(DATA_LINK)).unwrap();
        if let Some(o) = old {
            std::fs::remove_dir_all(dir.join(o)).unwrap();
        }
    }

    #[test]
    fn reload_follows_the_data_swap_and_keeps_the_last_good() {
        let d = tempfile::tempdir().unwrap();
        let store = BundleStore::new(d.path().to_path_buf(), expect());
        assert!(
            matches!(store.reload(true), Reload::Kept(_)),
            "nothing there yet"
        );
        assert!(store.current().is_none());

        swap(d.path(), 1, &[(BUNDLE_FILE, &doc("Strict"))]);
        let Reload::Swapped { old: None, new } = store.reload(false) else {
            panic!("first load")
        };
        assert_eq!(new.sha, sha256_hex(&doc("Strict")));
        assert!(matches!(store.reload(false), Reload::Unchanged));

        // Same bytes in a new generation: nothing to swap.
        swap(d.path(), 2, &[(BUNDLE_FILE, &doc("Strict"))]);
        assert!(matches!(store.reload(false), Reload::Unchanged));

        swap(d.path(), 3, &[(BUNDLE_FILE, b"{not json")]);
        assert!(matches!(store.reload(false), Reload::Kept(_)));
        assert_eq!(
            store.current().unwrap().doc.profile,
            "Strict",
            "last good kept"
        );
        assert!(store.last_error().is_some());

        swap(d.path(), 4, &[(BUNDLE_FILE, &doc("Review"))]);
        let Reload::Swapped { old: Some(o), new } = store.reload(false) else {
            panic!("swap")
        };
        assert_eq!(
            (o.doc.profile.as_str(), new.doc.profile.as_str()),
            ("Strict", "Review")
        );
        assert!(store.last_error().is_none());
    }

    /// Regression: a bundle repaired to the bytes already in force used to read as
    /// `Unchanged`, so `mcpgov_gateway_bundle_valid` stayed 0 for good.
    #[test]
    fn the_same_bundle_after_an_invalid_one_is_restored() {
        let d = tempfile::tempdir().unwrap();
        let store = BundleStore::new(d.path().to_path_buf(), expect());
        swap(d.path(), 1, &[(BUNDLE_FILE, &doc("Strict"))]);
        assert!(matches!(store.reload(false), Reload::Swapped { .. }));
        swap(d.path(), 2, &[(BUNDLE_FILE, b"{not json")]);
        assert!(matches!(store.reload(false), Reload::Kept(_)));
        swap(d.path(), 3, &[(BUNDLE_FILE, &doc("Strict"))]);
        assert!(matches!(store.reload(false), Reload::Restored));
        assert!(store.last_error().is_none());
        assert!(matches!(store.reload(false), Reload::Unchanged));
        // Broken again: reported again (the error is not deduplicated across a repair).
        swap(d.path(), 4, &[(BUNDLE_FILE, b"{not json")]);
        assert!(matches!(store.reload(false), Reload::Kept(_)));
    }

    #[test]
    fn sha_key_checked_against_the_same_generation() {
        let d = tempfile::tempdir().unwrap();
        let store = BundleStore::new(d.path().to_path_buf(), expect());
        let b = doc("Strict");
        let good = sha256_hex(&b);
        swap(
            d.path(),
            1,
            &[(BUNDLE_FILE, &b), (SHA_FILE, good.as_bytes())],
        );
        assert!(matches!(store.reload(false), Reload::Swapped { .. }));
        swap(
            d.path(),
            2,
            &[(BUNDLE_FILE, &doc("Review")), (SHA_FILE, good.as_bytes())],
        );
        let Reload::Kept(e) = store.reload(false) else {
            panic!("a sha that does not match")
        };
        assert!(e.0.contains(SHA_FILE), "{e}");
    }

    #[test]
    fn hostile_volumes_refused() {
        let d = tempfile::tempdir().unwrap();
        // Over the ConfigMap limit.
        let mut big = doc("Strict");
        big.resize(MAX_BUNDLE_BYTES + 10, b' ');
        swap(d.path(), 1, &[(BUNDLE_FILE, &big)]);
        assert!(
            read_dir(d.path(), &expect())
                .unwrap_err()
                .0
                .contains("over")
        );

        // `..data` pointing out of the volume.
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join(BUNDLE_FILE), doc("Strict")).unwrap();
        symlink(outside.path(), d.path().join(DATA_LINK)).unwrap();
        assert!(read_dir(d.path(), &expect()).is_err());

        // A FIFO must not hang the reader.
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join(BUNDLE_FILE);
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path we own in a fresh temp dir.
        assert_eq!(unsafe { libc_mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(
            read_dir(d.path(), &expect())
                .unwrap_err()
                .0
                .contains("not a regular file")
        );
    }

    unsafe extern "C" {
        #[link_name = "mkfifo"]
        fn libc_mkfifo(path: *const std::ffi::c_char, mode: u32) -> i32;
    }
}
