//! HTTP+SSE (2024-11-05) upstreams behind the gateway's streamable-HTTP routes. The agent
//! speaks streamable HTTP to the gateway; for an SSE server the gateway holds the upstream
//! event stream per agent session, posts messages to the endpoint it announced, and hands
//! each answer back as the POST's JSON body. Server-initiated messages go to the session's
//! standalone GET stream (dropped when none is open, as streamable HTTP allows).

use crate::sse::{Splitter, fields, message};
use bytes::Bytes;
use futures::StreamExt;
use reqwest::Url;
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};

/// Sessions held at most (each holds an upstream stream).
const MAX_SESSIONS: usize = 1024;
/// How long an answer may take on the upstream stream.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(300);
const ENDPOINT_TIMEOUT: Duration = Duration::from_secs(10);

pub struct Session {
    pub server: String,
    post_url: Url,
    creds: HeaderMap,
    pending: Mutex<HashMap<String, oneshot::Sender<String>>>,
    push: Mutex<Option<mpsc::Sender<Bytes>>>,
    reader: tokio::task::AbortHandle,
}

impl Drop for Session {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
}

/// An unguessable session id (other containers of the pod share the loopback).
fn new_id() -> String {
    let mut b = [0u8; 16];
    let ok = std::fs::File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut b));
    ok.expect("the kernel's random source");
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

impl Sessions {
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.map.lock().expect("not poisoned").get(id).cloned()
    }

    pub fn remove(&self, id: &str) -> Option<Arc<Session>> {
        self.map.lock().expect("not poisoned").remove(id)
    }

    pub fn insert(&self, s: Arc<Session>) -> Result<String, String> {
        let mut m = self.map.lock().expect("not poisoned");
        if m.len() >= MAX_SESSIONS {
            return Err(format!("over {MAX_SESSIONS} SSE upstream sessions open"));
        }
        let id = new_id();
        m.insert(id.clone(), s);
        Ok(id)
    }
}

/// Open the upstream event stream and wait for its endpoint. `on_message` sees every
/// message that is not an answer to a pending request (notifications, server requests).
pub async fn open(
    client: &reqwest::Client,
    server: &str,
    sse_url: &str,
    creds: HeaderMap,
    max: usize,
    on_message: impl Fn(&str) + Send + Sync + 'static,
) -> Result<Arc<Session>, String> {
    let url = Url::parse(sse_url).map_err(|e| e.to_string())?;
    let resp = client
        .get(url.clone())
        .headers(creds.clone())
        .header("accept", "text/event-stream")
        .send()
        .await
        .map_err(|e| format!("SSE stream: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("SSE stream: HTTP {}", resp.status()));
    }
    let (ep_tx, ep_rx) = oneshot::channel::<String>();
    let shared: Arc<Mutex<Option<Arc<Session>>>> = Arc::new(Mutex::new(None));
    let weak_slot = shared.clone();
    let task = tokio::spawn(async move {
        let mut body = resp.bytes_stream();
        let mut split = Splitter::new(max);
        let mut out = Vec::new();
        let mut ep_tx = Some(ep_tx);
        while let Some(Ok(chunk)) = body.next().await {
            if split.push(&chunk, &mut out).is_err() {
                break;
            }
            for ev in out.drain(..) {
                let f = fields(&ev);
                let Some(data) = f.data else { continue };
                if f.event.as_deref() == Some("endpoint") {
                    if let Some(tx) = ep_tx.take() {
                        let _ = tx.send(data);
                    }
                    continue;
                }
                let sess = weak_slot.lock().expect("not poisoned").clone();
                let Some(sess) = sess else { continue };
                let answer_id = serde_json::from_str::<Value>(&data).ok().and_then(|v| {
                    let is_answer = v.get("method").is_none()
                        && (v.get("result").is_some() || v.get("error").is_some());
                    is_answer
                        .then(|| v.get("id").map(Value::to_string))
                        .flatten()
                });
                let waiter =
                    answer_id.and_then(|id| sess.pending.lock().expect("not poisoned").remove(&id));
                match waiter {
                    Some(w) => {
                        let _ = w.send(data);
                    }
                    None => {
                        on_message(&data);
                        if let Some(p) = sess.push.lock().expect("not poisoned").as_ref() {
                            let _ = p.try_send(message(&data));
                        }
                    }
                }
            }
        }
        // The stream is gone: pending requests fail (their senders drop with the session).
        if let Some(s) = weak_slot.lock().expect("not poisoned").take() {
            s.pending.lock().expect("not poisoned").clear();
        }
    });
    let endpoint = tokio::time::timeout(ENDPOINT_TIMEOUT, ep_rx)
        .await
        .map_err(|_| "the SSE stream announced no endpoint".to_string())?
        .map_err(|_| "the SSE stream ended before announcing its endpoint".to_string())?;
    let post_url = url
        .join(endpoint.trim())
        .map_err(|e| format!("SSE endpoint: {e}"))?;
    if !same_origin(&url, &post_url) {
        task.abort();
        return Err("the SSE endpoint is on another origin".into());
    }
    let sess = Arc::new(Session {
        server: server.to_string(),
        post_url,
        creds,
        pending: Mutex::new(HashMap::new()),
        push: Mutex::new(None),
        reader: task.abort_handle(),
    });
    *shared.lock().expect("not poisoned") = Some(sess.clone());
    Ok(sess)
}

impl Session {
    /// Post one message; for a request, wait for its answer on the stream.
    pub async fn send(
        &self,
        client: &reqwest::Client,
        msg: &Value,
    ) -> Result<Option<String>, String> {
        let is_request = msg.get("method").is_some() && msg.get("id").is_some_and(|i| !i.is_null());
        let rx = is_request.then(|| {
            let (tx, rx) = oneshot::channel();
            self.pending
                .lock()
                .expect("not poisoned")
                .insert(msg["id"].to_string(), tx);
            rx
        });
        let resp = client
            .post(self.post_url.clone())
            .headers(self.creds.clone())
            .header("content-type", "application/json")
            .body(msg.to_string())
            .send()
            .await
            .map_err(|e| format!("SSE post: {e}"))?;
        if !resp.status().is_success() {
            if is_request {
                self.pending
                    .lock()
                    .expect("not poisoned")
                    .remove(&msg["id"].to_string());
            }
            return Err(format!("SSE post: HTTP {}", resp.status()));
        }
        match rx {
            None => Ok(None),
            Some(rx) => tokio::time::timeout(ANSWER_TIMEOUT, rx)
                .await
                .map_err(|_| "no answer on the SSE stream in time".to_string())?
                .map(Some)
                .map_err(|_| "the SSE stream closed before the answer".to_string()),
        }
    }

    /// The agent's standalone GET stream: server messages from now on go there.
    pub fn attach(&self) -> mpsc::Receiver<Bytes> {
        let (tx, rx) = mpsc::channel(64);
        *self.push.lock().expect("not poisoned") = Some(tx);
        rx
    }

    /// End the upstream stream (the reader task holds the session until then).
    pub fn close(&self) {
        self.reader.abort();
        self.pending.lock().expect("not poisoned").clear();
    }

    pub fn pusher(&self) -> Option<mpsc::Sender<Bytes>> {
        self.push.lock().expect("not poisoned").clone()
    }
}

/// The gateway's own look at an SSE server's tools.
pub async fn list_tools(
    client: &reqwest::Client,
    sse_url: &str,
    creds: HeaderMap,
    max: usize,
) -> Result<Vec<Value>, String> {
    let s = open(client, "", sse_url, creds, max, |_| {}).await?;
    let ask = |id: u64, method: &str, params: Value| serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let init = s
        .send(
            client,
            &ask(
                0,
                "initialize",
                serde_json::json!({"protocolVersion": "2024-11-05", "capabilities": {},
            "clientInfo": {"name": "mcpgov-gateway", "version": env!("CARGO_PKG_VERSION")}}),
            ),
        )
        .await?
        .ok_or("no initialize answer")?;
    serde_json::from_str::<Value>(&init)
        .ok()
        .and_then(|v| v.pointer("/result/protocolVersion").cloned())
        .ok_or("initialize failed")?;
    s.send(
        client,
        &serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await?;
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for page in 1..=100u64 {
        let params = match &cursor {
            Some(c) => serde_json::json!({"cursor": c}),
            None => serde_json::json!({}),
        };
        let a = s
            .send(client, &ask(page, "tools/list", params))
            .await?
            .ok_or("no tools/list answer")?;
        let v: Value = serde_json::from_str(&a).map_err(|e| format!("tools/list answer: {e}"))?;
        let r = v.get("result").ok_or("tools/list answered an error")?;
        tools.extend(
            r.get("tools")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        );
        if tools.len() > crate::contracts::MAX_TOOLS_PER_SERVER {
            return Err("too many tools".into());
        }
        match r.get("nextCursor").and_then(Value::as_str) {
            Some(c) if !c.is_empty() && cursor.as_deref() != Some(c) => {
                cursor = Some(c.to_string())
            }
            _ => return Ok(tools),
        }
    }
    Err("tools/list has over 100 pages".into())
}
