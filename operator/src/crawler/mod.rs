//! The crawler's client core: connect to one MCP server, negotiate the protocol, list its
//! tools, resources and resource templates, and return a bounded, digested catalog.
//!
//! This module owns the public API ([`crawl`], [`crawl_and_watch`], [`Target`],
//! [`NetPolicy`], [`Catalog`], [`ListChanged`] and [`CrawlError`]); the work is split into:
//! - `guard`: the SSRF guard (address classification, guarded DNS, redirect policy);
//! - `session`: the MCP session over rmcp (handshake, per-request timeouts, error mapping);
//! - `changes`: the client handler, and watching a kept session for list changes;
//! - `http`: the HTTP client under rmcp's streamable HTTP transport, which reads list
//!   responses itself;
//! - `sse`: a small legacy HTTP+SSE client transport, which rmcp no longer ships;
//! - `tap`: where the transports leave list responses, and the `maxBytes` budget;
//! - `page`: reading one list response into the retained items, caps applied as it reads;
//! - `listing`: paging with a page cap and repeated-cursor detection;
//! - `catalog`: the retained catalog types and the catalog digest;
//! - `untrusted`: server-sent text made safe to show (bounded, escaped);
//! - `fake` (tests only): in-process fake servers and the crawl tests against them.
//!
//! A crawl is all or nothing: any failure, or a cap exceeded, fails it as a whole, so no
//! partial or stale catalog ever leaves this module.
//!
//! Memory: a crawl holds at most one list response (within what `maxBytes` leaves), the
//! items kept so far, and while a tool is read a sort table of at most 1.6 times the size
//! of its largest schema object; see [`crawl_memory_bound`].

mod catalog;
mod changes;
mod error;
mod guard;
mod http;
mod listing;
mod page;
mod session;
mod sse;
mod tap;
pub mod untrusted;

#[cfg(test)]
mod fake;

use std::time::{Duration, Instant};

pub use catalog::{Annotations, Catalog, Resource, ResourceTemplate, Tool};
pub use changes::{ListChanged, WatchEnd};
pub use error::{Cap, CrawlError};
pub use guard::address_refusal;
pub use listing::MAX_PAGES_PER_LIST;
pub use session::{CLIENT_NAME, client_capabilities};
pub use tap::MESSAGE_LIMIT;

/// One `tools/list` entry read as a crawl reads it, for tests elsewhere in the crate.
#[cfg(test)]
pub(crate) fn page_tool_for_tests(raw: &serde_json::value::RawValue) -> Tool {
    page::tool(raw, 0, &page::Clock::unbounded()).expect("a valid tool")
}

/// The most memory one crawl holds at once, for its caps. The scheduler runs at most
/// `--crawl-concurrency` crawls, so crawling holds at most that many times this (the
/// arithmetic against the chart's memory limit is in docs/crawler.md):
///
/// - 8 MiB for the session and the handshake, whose messages rmcp parses at up to about
///   30 times their size and which [`MESSAGE_LIMIT`] bounds to 256 KiB;
/// - 2.6 × `max_bytes`: one list response at a time, read up to what `maxBytes` leaves
///   (1×), and, while a tool is read, either the sort table of its largest schema object
///   (8 bytes a member, at most 1.6 times the member's own size) or the strings kept from
///   the tools before it (at most what they took on the wire);
/// - 384 bytes a tool kept, besides its strings (the struct, with room for the vector to
///   grow, and its digest).
pub fn crawl_memory_bound(max_bytes: usize, max_tools: usize) -> usize {
    const FIXED: usize = 8 << 20;
    const PER_TOOL: usize = 384;
    FIXED + max_bytes.saturating_mul(13) / 5 + max_tools.saturating_mul(PER_TOOL)
}

/// How the server is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP (protocol 2025-03-26 and later): rmcp's client transport.
    StreamableHttp,
    /// The legacy HTTP+SSE transport (protocol 2024-11-05): `sse`'s client.
    Sse,
}

/// One server to crawl and the limits of the crawl.
#[derive(Clone)]
pub struct Target {
    pub url: String,
    pub transport: Transport,
    /// Sent on every request. Values are read from Secrets and never logged or shown.
    pub headers: Vec<(String, String)>,
    /// Bound on each request (and on each connect).
    pub request_timeout: Duration,
    /// Bound on the whole crawl, handshake included.
    pub deadline: Duration,
    /// Over this many tools the crawl fails.
    pub max_tools: usize,
    /// Over this many bytes of list responses (every page of every list, counted as they
    /// arrive) the crawl fails.
    pub max_bytes: usize,
}

// Hand-written so header values never reach a log through `{:?}`.
impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("Target")
            .field("url", &self.url)
            .field("transport", &self.transport)
            .field("headers", &header_names)
            .field("request_timeout", &self.request_timeout)
            .field("deadline", &self.deadline)
            .field("max_tools", &self.max_tools)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

/// Which address ranges the crawler may connect to, besides public ones.
#[derive(Clone, Debug)]
pub struct NetPolicy {
    pub allow_loopback: bool,
    pub allow_private: bool,
}

impl Default for NetPolicy {
    /// In-cluster servers live on private addresses; the operator's own host does not
    /// serve MCP, so loopback is refused unless asked for.
    fn default() -> Self {
        NetPolicy {
            allow_loopback: false,
            allow_private: true,
        }
    }
}

/// Crawl one server: handshake, then `tools/list`, `resources/list`,
/// `resources/templates/list` and `prompts/list` (support only), each paged to the end.
///
/// Every request is bounded by `target.request_timeout` and the whole crawl by
/// `target.deadline`; the connection is closed before returning.
pub async fn crawl(target: &Target, net: &NetPolicy) -> Result<Catalog, CrawlError> {
    crawl_inner(target, net, false).await.map(|(c, _)| c)
}

/// [`crawl`], and then, when the server announced list-changed notifications, keep the
/// session open and return it as a [`ListChanged`] watch that resolves on the first
/// such notification or when the session ends, and closes the session when dropped.
///
/// At 2026-07-28 the watch needs a `subscriptions/listen` stream, opened within the
/// crawl's bounds; a server that refuses it is simply not watched. The catalog never
/// depends on the watch.
pub async fn crawl_and_watch(
    target: &Target,
    net: &NetPolicy,
) -> Result<(Catalog, Option<ListChanged>), CrawlError> {
    crawl_inner(target, net, true).await
}

async fn crawl_inner(
    target: &Target,
    net: &NetPolicy,
    keep: bool,
) -> Result<(Catalog, Option<ListChanged>), CrawlError> {
    let deadline = Instant::now() + target.deadline;
    let work = async {
        let mut session = session::Session::open(target, net, deadline).await?;
        let caps = listing::Caps {
            max_tools: target.max_tools,
            max_bytes: target.max_bytes,
            max_pages: MAX_PAGES_PER_LIST,
        };
        let listed = listing::list_catalog(&session, caps).await;
        let agreed = session.agreed();
        let catalog = match listed {
            Ok(listed) => catalog::finish(agreed, listed)?,
            Err(e) => {
                session.close();
                return Err(e);
            }
        };
        let watch = if keep {
            session.into_watch().await
        } else {
            session.close();
            None
        };
        Ok((catalog, watch))
    };
    // The per-request bounds inside cannot see the time spent between requests, so the
    // whole crawl is bounded here too; dropping `work` drops the session, which closes it.
    match tokio::time::timeout(target.deadline, work).await {
        Ok(result) => result,
        Err(_) => Err(CrawlError::Timeout { phase: "deadline" }),
    }
}
