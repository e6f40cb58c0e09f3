//! Leader election on a Lease (kube-lease-manager): every replica watches and keeps the
//! graph warm; only the holder writes status and ConfigMaps and crawls. A replica that
//! loses the lease stops writing at once; if the lease task dies, the process exits.

use kube::Client;
use kube_lease_manager::{LeaseManagerBuilder, LeaseParams};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio::sync::watch;
use tokio::task::JoinHandle;

#[derive(Clone, Debug)]
pub struct Election {
    pub lease_name: String,
    pub lease_namespace: String,
    pub identity: String,
    /// Seconds a lease is valid without renewal (takeover time after a crash).
    pub duration_seconds: u64,
}

/// Leadership as the index and the writer see it.
#[derive(Clone)]
pub struct Leadership {
    pub changes: watch::Receiver<bool>,
    /// The same, readable without awaiting, checked before every write.
    pub flag: Arc<AtomicBool>,
}

impl Leadership {
    pub fn is_leader(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Always the leader: a single replica without election.
    pub fn always() -> (Leadership, Option<JoinHandle<Result<(), String>>>) {
        let (_tx, rx) = watch::channel(true);
        // Keep the sender alive for the process so `changed()` never errors.
        std::mem::forget(_tx);
        (
            Leadership {
                changes: rx,
                flag: Arc::new(AtomicBool::new(true)),
            },
            None,
        )
    }
}

/// Start competing for the lease. The returned task ends only on failure.
pub async fn elect(
    client: Client,
    e: &Election,
) -> Result<(Leadership, JoinHandle<Result<(), String>>), String> {
    let duration = e.duration_seconds.max(2);
    let params = LeaseParams::new(&e.identity, duration, (duration / 3).max(1));
    let manager = LeaseManagerBuilder::new(client, &e.lease_name)
        .with_namespace(&e.lease_namespace)
        .with_parameters(params)
        .build()
        .await
        .map_err(|err| {
            format!(
                "cannot use Lease {}/{}: {err}",
                e.lease_namespace, e.lease_name
            )
        })?;
    let (mut changes, task) = manager.watch().await;
    let flag = Arc::new(AtomicBool::new(false));
    let (tx, rx) = watch::channel(false);
    let (flag2, identity) = (flag.clone(), e.identity.clone());
    let relay = tokio::spawn(async move {
        loop {
            let leader = *changes.borrow_and_update();
            // Flip the flag before telling anyone, so no write starts after a loss.
            flag2.store(leader, Ordering::SeqCst);
            tracing::info!(identity = %identity, leader, "leadership");
            let _ = tx.send(leader);
            if changes.changed().await.is_err() {
                flag2.store(false, Ordering::SeqCst);
                break;
            }
        }
        match task.await {
            Ok(Ok(_)) => Err("the lease task stopped".to_string()),
            Ok(Err(err)) => Err(format!("the lease task failed: {err}")),
            Err(err) => Err(format!("the lease task panicked: {err}")),
        }
    });
    Ok((Leadership { changes: rx, flag }, relay))
}
