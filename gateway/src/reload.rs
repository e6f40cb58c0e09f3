//! Follows the bundle volume: inotify on the directory (the kubelet's `..data` rename is
//! one event), a polling loop behind it (inotify can miss, or be unavailable), and a timer
//! for the next `eligibleUntil` so sessions hear of an expiry at its instant.

use crate::bundle::Reload;
use crate::proxy::App;
use jiff::Timestamp;
use notify::Watcher;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tracing::{info, warn};

/// Read the volume once and act on what changed.
pub fn reload_now(app: &App, force: bool) {
    match app.store.reload(force) {
        Reload::Unchanged => {}
        Reload::Swapped { old, new } => {
            let m = &app.metrics;
            m.bundle_loaded.set(1);
            m.bundle_valid.set(1);
            m.bundle_reloads.with_label_values(&["swapped"]).inc();
            m.bundle_info.reset();
            m.bundle_info
                .with_label_values(&[new.sha.as_str(), app.cfg.agent.as_str()])
                .set(1);
            let tools: usize = new.tools.values().map(|t| t.len()).sum();
            info!(sha = %new.sha, previous = ?old.as_ref().map(|o| o.sha.clone()), tools, servers = new.servers.len(), "bundle loaded");
            app.bundle_swapped(old.as_deref(), &new);
        }
        Reload::Restored => {
            app.metrics.bundle_valid.set(1);
            info!("the bundle on disk is valid again (the one in force)");
        }
        Reload::Kept(e) => {
            app.metrics.bundle_valid.set(0);
            app.metrics
                .bundle_reloads
                .with_label_values(&["invalid"])
                .inc();
            match app.store.current() {
                Some(b) => {
                    warn!(error = ?e.0, keeping = %b.sha, "new bundle is invalid; the last good one stays in force")
                }
                None => warn!(error = ?e.0, "no valid bundle: every tools/* request is denied"),
            }
        }
    }
}

pub async fn run(app: Arc<App>, poll: Duration) {
    let (tx, mut rx) = mpsc::channel::<()>(1);
    let mut watcher: Option<notify::RecommendedWatcher> = None;
    let watch = |watcher: &mut Option<notify::RecommendedWatcher>| {
        if watcher.is_some() {
            return;
        }
        let tx = tx.clone();
        let w = notify::recommended_watcher(move |_ev: notify::Result<notify::Event>| {
            let _ = tx.try_send(());
        })
        .and_then(|mut w| {
            w.watch(app.store.dir(), notify::RecursiveMode::NonRecursive)?;
            Ok(w)
        });
        match w {
            Ok(w) => *watcher = Some(w),
            Err(e) => {
                warn!(error = %e, dir = %app.store.dir().display(), "cannot watch the bundle directory; polling only")
            }
        }
    };
    watch(&mut watcher);
    reload_now(&app, true);
    // Expiries up to this instant have been announced. The next one is looked up after
    // it, not after "now": an instant that passed while another branch ran (a poll, a
    // reload on a busy machine) is still announced, at once.
    let mut announced = Timestamp::now();
    loop {
        let now = Timestamp::now();
        let expiry = app.store.current().and_then(|b| b.next_expiry(announced));
        let until_expiry = expiry
            .as_ref()
            .map(|(t, _)| Duration::from_millis(t.duration_since(now).as_millis().max(0) as u64))
            .unwrap_or(Duration::from_secs(3600));
        tokio::select! {
            _ = rx.recv() => {}
            _ = tokio::time::sleep(poll) => watch(&mut watcher),
            _ = tokio::time::sleep(until_expiry), if expiry.is_some() => {
                let (at, _) = expiry.expect("guarded");
                // Sleep rounds down to the millisecond: make sure the instant has passed.
                let wait = at.duration_since(Timestamp::now());
                if wait.is_positive() {
                    tokio::time::sleep(Duration::from_millis(wait.as_millis() as u64 + 1)).await;
                }
                // Every server with a tool expiring by then (several may share the instant).
                let due = app
                    .store
                    .current()
                    .map(|b| b.expiring(announced, at))
                    .unwrap_or_default();
                for server in due {
                    info!(%server, %at, "an exception expired: tools/list_changed to its sessions");
                    app.notify_list_changed(&server);
                }
                announced = at;
                continue;
            }
        }
        reload_now(&app, false);
    }
}
