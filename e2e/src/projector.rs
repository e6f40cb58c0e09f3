//! The kubelet's ConfigMap volume, without a kubelet: `mcpgov-projector` (e2e/projector/,
//! built by e2e/build-projector.sh) watches one ConfigMap on the suite's API server and
//! projects it into a directory with the kubelet's own AtomicWriter. Tests start it
//! where a pod would mount the ConfigMap and wait on the lines it prints.

use crate::DEADLINE;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The cached binary: `$MCPGOV_PROJECTOR`, else `bin/` of the control plane's cache.
pub fn projector_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("MCPGOV_PROJECTOR") {
        return p.into();
    }
    let bin_dir = std::env::var_os("MCPGOV_BIN_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            let cache = std::env::var_os("MCPGOV_CACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/mcpgov"))
                })?;
            Some(cache.join("bin"))
        })
        .expect("MCPGOV_BIN_DIR, MCPGOV_CACHE or HOME");
    bin_dir.join("mcpgov-projector")
}

/// One `projected ...` line: the ConfigMap version now visible under `..data`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projection {
    pub resource_version: String,
    /// The projected file names, sorted.
    pub keys: Vec<String>,
    /// The timestamped directory `..data` pointed at right after the write.
    pub data: String,
}

impl Projection {
    fn parse(line: &str) -> Option<Projection> {
        let rest = line.strip_prefix("projected ")?;
        let field = |name: &str| {
            rest.split(' ')
                .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
                .map(str::to_string)
        };
        let keys = field("keys")?;
        Some(Projection {
            resource_version: field("resourceVersion")?,
            keys: keys
                .split(',')
                .filter(|k| !k.is_empty())
                .map(str::to_string)
                .collect(),
            data: field("data")?,
        })
    }
}

/// A running projector; killed on drop (`stop` ends it with SIGTERM instead).
pub struct Projector {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    pub dir: PathBuf,
    log: PathBuf,
}

impl Projector {
    /// Project ConfigMap `namespace/name` into `dir` and wait for the first projection
    /// (a pod whose non-optional ConfigMap is missing does not start either).
    pub async fn start(namespace: &str, name: &str, dir: &Path) -> Projector {
        let p = Self::spawn(namespace, name, dir);
        p.wait_for_projections(1).await;
        p
    }

    /// Start the process and return at once. Stderr (klog) goes to
    /// `$MCPGOV_E2E_LOGS/projector-<namespace>-<name>.log`.
    pub fn spawn(namespace: &str, name: &str, dir: &Path) -> Projector {
        let kubeconfig = std::env::var_os("KUBECONFIG")
            .expect("KUBECONFIG must point at the e2e control plane (scripts/test.sh starts it)");
        let bin = projector_bin();
        assert!(
            bin.is_file(),
            "{} is missing: run e2e/build-projector.sh (start-control-plane.sh does)",
            bin.display()
        );
        let log = std::env::var_os("MCPGOV_E2E_LOGS")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir)
            .join(format!("projector-{namespace}-{name}.log"));
        if let Some(parent) = log.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let stderr = std::fs::File::create(&log)
            .map(Stdio::from)
            .unwrap_or_else(|_| Stdio::null());
        let mut child = Command::new(bin)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--namespace", namespace, "--name", name])
            .arg("--dir")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("spawn mcpgov-projector");
        let stdout = child.stdout.take().expect("piped stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                sink.lock().unwrap().push(line);
            }
        });
        Projector {
            child,
            lines,
            dir: dir.to_path_buf(),
            log,
        }
    }

    /// Every line printed so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Every projection so far, oldest first.
    pub fn projections(&self) -> Vec<Projection> {
        self.lines()
            .iter()
            .filter_map(|l| Projection::parse(l))
            .collect()
    }

    /// Wait until at least `n` projections happened; returns the `n`-th.
    pub async fn wait_for_projections(&self, n: usize) -> Projection {
        self.wait("projections", |p| p.projections().into_iter().nth(n - 1))
            .await
    }

    /// Wait until ConfigMap version `resource_version` is projected (fails at once if
    /// the projector reports that writing it failed).
    pub async fn wait_for_projection(&self, resource_version: &str) -> Projection {
        let failed = format!("error resourceVersion={resource_version}:");
        self.wait(&format!("resourceVersion={resource_version}"), |p| {
            if let Some(err) = p.lines().iter().find(|l| l.starts_with(&failed)) {
                panic!("projector: {err}");
            }
            p.projections()
                .into_iter()
                .find(|x| x.resource_version == resource_version)
        })
        .await
    }

    /// Wait for a line starting with `prefix` (`deleted `, `error `) and return it.
    pub async fn wait_for_line(&self, prefix: &str) -> String {
        self.wait(prefix, |p| {
            p.lines().into_iter().find(|l| l.starts_with(prefix))
        })
        .await
    }

    async fn wait<T>(&self, what: &str, mut found: impl FnMut(&Self) -> Option<T>) -> T {
        let start = Instant::now();
        loop {
            if let Some(t) = found(self) {
                return t;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "projector never printed {what}; stdout: {:?}; stderr in {}",
                self.lines(),
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// End it as the kubelet ends a container (SIGTERM) and return how it exited.
    pub fn stop(mut self) -> ExitStatus {
        // SAFETY: kill(2) on our own child's pid, which is not reaped before `wait`.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for projector") {
                return status;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "projector ignored SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Projector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
