//! The crawl path, from fetch to catalog, in one place:
//! - the MCP client itself is [`crate::crawler`] (connect, list, bound, digest: a
//!   [`crate::crawler::Catalog`]);
//! - `schedule`: which server is crawled when (intervals, backoff, list-changed
//!   watches, bounded concurrency), sending each [`Outcome`] to the index task;
//! - `status`: the crawler's part of MCPServer status for an outcome, bounded, with
//!   the one list of catalog fields ([`status::CatalogFields`]);
//! - `apply`: `mcpgov catalog apply`, the same fields written from a file.
//!
//! The index keeps the engine's (full) catalog from each outcome and plans the status
//! write; the conversions between the crawled, status and engine shapes of a tool are
//! `From` impls beside the crawled types (`crawler::catalog`) and the status types
//! (`crd::server`).

pub mod apply;
mod schedule;
pub mod status;

use crate::crawler::{self, Target, Transport};
use crate::crd::MCPServer;
use crate::crd::server::Transport as SpecTransport;
use mcpgov_engine::ObjKey;
use std::collections::BTreeMap;
use std::time::Duration;

pub use schedule::{EARLY_MIN_GAP, MAX_WATCHED, backoff, spawn};

/// What the scheduler needs of one MCPServer; a change of any field crawls at once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CrawlSpec {
    pub url: String,
    pub sse: bool,
    /// (header name, Secret name, key): values are read at crawl time, never stored.
    pub headers: Vec<(String, String, String)>,
    pub timeout: Duration,
    pub interval: Duration,
    pub max_tools: usize,
    pub max_bytes: usize,
    /// The server's contract approval: an approval re-crawls at once, so the status
    /// diff and the pending count follow it without waiting for the interval.
    pub contracts: mcpgov_engine::Contracts,
}

impl CrawlSpec {
    /// The crawler's target, with header values already read.
    pub fn target(&self, headers: Vec<(String, String)>) -> Target {
        Target {
            url: self.url.clone(),
            transport: if self.sse {
                Transport::Sse
            } else {
                Transport::StreamableHttp
            },
            headers,
            request_timeout: self.timeout,
            // Connect, initialize, and a few list pages.
            deadline: self.timeout * 6,
            max_tools: self.max_tools,
            max_bytes: self.max_bytes,
        }
    }

    pub fn of(s: &MCPServer) -> CrawlSpec {
        let e = &s.spec.endpoint;
        CrawlSpec {
            url: e.url.clone(),
            sse: e.transport == SpecTransport::SSE,
            headers: e
                .headers
                .iter()
                .map(|h| {
                    let r = &h.value_from.secret_key_ref;
                    (h.name.clone(), r.name.clone(), r.key.clone())
                })
                .collect(),
            timeout: Duration::from_secs(e.timeout_seconds.max(1) as u64),
            interval: Duration::from_secs(s.spec.crawl.interval_seconds.max(1) as u64),
            max_tools: s.spec.crawl.max_tools.max(1) as usize,
            max_bytes: s.spec.crawl.max_bytes.max(1) as usize,
            contracts: s.contract_pins(),
        }
    }
}

pub type Specs = BTreeMap<ObjKey, CrawlSpec>;

/// How one crawl ended.
#[derive(Debug)]
pub struct Outcome {
    pub key: ObjKey,
    pub spec: CrawlSpec,
    pub finished: jiff::Timestamp,
    pub duration: Duration,
    pub result: Result<crawler::Catalog, Failure>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// CamelCase reason for the condition and the metric label.
    pub reason: &'static str,
    pub message: String,
}
