//! Watching a crawled server for list changes: after a crawl the session may stay open,
//! and the server's `notifications/{tools,resources,prompts}/list_changed` says when to
//! list again.
//!
//! How the notifications arrive depends on the session:
//! - Legacy HTTP+SSE (`sse`): on the event stream the session already reads.
//! - Streamable HTTP after `initialize` (a session id): on the standalone GET stream,
//!   which rmcp's client opens by itself once the session is initialized (and skips when
//!   the server answers the GET with 405).
//! - Streamable HTTP at 2026-07-28 (`server/discover`, no session): there is no standing
//!   stream; the client asks for the notifications with a `subscriptions/listen` request
//!   whose response stream carries them, routed by rmcp to a [`Subscription`] rather
//!   than to the handler.
//!
//! Both paths end in one [`ListChanged`] future. Notifications are unreliable in
//! practice (servers forget them, streams drop silently), so a watch only brings a
//! re-list forward: the scheduled re-list is what keeps catalogs fresh.

use super::untrusted;
use rmcp::ClientHandler;
use rmcp::model::{ClientConfig, ServerNotification};
use rmcp::service::{NotificationContext, RoleClient, RunningService, Subscription};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::Notify;

/// The crawler's rmcp client handler: the fixed client identity, and a signal raised by
/// any list-changed notification that reaches the handler (legacy sessions, and
/// unscoped ones on 2026-07-28). Every other server message gets rmcp's default answer.
#[derive(Clone)]
pub(crate) struct Handler {
    config: ClientConfig,
    changed: Arc<Notify>,
}

impl Handler {
    pub fn new(config: ClientConfig) -> Self {
        Handler {
            config,
            changed: Arc::default(),
        }
    }

    pub fn changed(&self) -> Arc<Notify> {
        self.changed.clone()
    }

    fn signal(&self, list: &'static str) {
        tracing::debug!(list, "server sent list_changed");
        // `notify_one` keeps a permit when nobody waits yet, so a notification that
        // arrives while the crawl is still listing is not lost.
        self.changed.notify_one();
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.signal("tools");
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.signal("resources");
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.signal("prompts");
    }
}

/// Why a watch ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchEnd {
    /// The server said a list changed: list again.
    ListChanged,
    /// The session (or its subscription) closed or failed: nothing more will come.
    Closed,
}

/// An open session kept after a crawl, as a future that resolves on the first
/// list-changed notification or when the session ends. Dropping it (or letting it
/// resolve) closes the session in the background.
#[must_use = "dropping the watch closes the session"]
pub struct ListChanged {
    fut: Pin<Box<dyn Future<Output = WatchEnd> + Send>>,
}

impl std::fmt::Debug for ListChanged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListChanged")
    }
}

impl Future for ListChanged {
    type Output = WatchEnd;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<WatchEnd> {
        self.fut.as_mut().poll(cx)
    }
}

impl ListChanged {
    /// Own the session, and the 2026-07-28 subscription if one was opened.
    pub(crate) fn new(
        running: RunningService<RoleClient, Handler>,
        changed: Arc<Notify>,
        subscription: Option<Subscription>,
    ) -> Self {
        ListChanged {
            fut: Box::pin(watch(running, changed, subscription)),
        }
    }
}

#[cfg(test)]
impl ListChanged {
    /// A watch that ends as `fut` does, for the scheduler's tests.
    pub(crate) fn from_future(fut: impl Future<Output = WatchEnd> + Send + 'static) -> Self {
        ListChanged { fut: Box::pin(fut) }
    }
}

fn is_list_changed(n: &ServerNotification) -> bool {
    matches!(
        n,
        ServerNotification::ToolListChangedNotification(_)
            | ServerNotification::ResourceListChangedNotification(_)
            | ServerNotification::PromptListChangedNotification(_)
    )
}

async fn watch(
    running: RunningService<RoleClient, Handler>,
    changed: Arc<Notify>,
    subscription: Option<Subscription>,
) -> WatchEnd {
    let subscribed = async move {
        let Some(mut sub) = subscription else {
            return std::future::pending().await;
        };
        loop {
            match sub.next().await {
                Ok(Some(n)) if is_list_changed(&n) => return WatchEnd::ListChanged,
                Ok(Some(_)) => {}
                Ok(None) => {
                    let end = untrusted::line(&format!("{:?}", sub.end()), untrusted::MAX_MESSAGE);
                    tracing::debug!(%end, "list-changed subscription ended");
                    return WatchEnd::Closed;
                }
                Err(e) => {
                    let e = untrusted::line(&e.to_string(), untrusted::MAX_MESSAGE);
                    tracing::debug!(error = %e, "list-changed subscription failed");
                    return WatchEnd::Closed;
                }
            }
        }
    };
    // `waiting` owns the session: when another branch wins, dropping it drops the
    // session, whose drop guard cancels it and closes the transport (a DELETE of the
    // HTTP session, the SSE stream) in rmcp's task.
    tokio::select! {
        _ = changed.notified() => WatchEnd::ListChanged,
        end = subscribed => end,
        _ = running.waiting() => WatchEnd::Closed,
    }
}
