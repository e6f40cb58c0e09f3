//! A plain streamable-HTTP MCP client: one session, requests answered as JSON or as an
//! event stream. The same code talks to the upstream directly and through the gateway,
//! so both paths pay the same client cost.

use serde_json::{Value, json};

const SESSION: &str = "mcp-session-id";
const PROTOCOL: &str = "mcp-protocol-version";

pub struct Session {
    http: reqwest::Client,
    pub url: String,
    pub sid: Option<String>,
    proto: String,
    next_id: u64,
}

pub type Error = String;

impl Session {
    pub async fn open(http: &reqwest::Client, url: &str) -> Result<Session, Error> {
        let mut s = Session {
            http: http.clone(),
            url: url.to_string(),
            sid: None,
            proto: "2025-06-18".into(),
            next_id: 0,
        };
        let init = s
            .rpc(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "gateway-bench", "version": "1"}}),
            )
            .await?;
        if let Some(p) = init
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str)
        {
            s.proto = p.to_string();
        }
        s.notify("notifications/initialized").await?;
        Ok(s)
    }

    fn post(&self, body: String) -> reqwest::RequestBuilder {
        let mut r = self
            .http
            .post(&self.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header(PROTOCOL, &self.proto)
            .body(body);
        if let Some(s) = &self.sid {
            r = r.header(SESSION, s);
        }
        r
    }

    async fn notify(&self, method: &str) -> Result<(), Error> {
        let r = self
            .post(json!({"jsonrpc": "2.0", "method": method}).to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !r.status().is_success() {
            return Err(format!("{method}: HTTP {}", r.status()));
        }
        Ok(())
    }

    /// One request, its whole answer read and parsed.
    pub async fn rpc(&mut self, method: &str, params: Value) -> Result<Value, Error> {
        self.next_id += 1;
        let id = self.next_id;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let r = self
            .post(body.to_string())
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if let Some(s) = r.headers().get(SESSION).and_then(|v| v.to_str().ok()) {
            self.sid = Some(s.to_string());
        }
        let status = r.status();
        let sse = r
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        let bytes = r.bytes().await.map_err(|e| e.to_string())?;
        if !status.is_success() {
            return Err(format!(
                "{method}: HTTP {status}: {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
            ));
        }
        let text = std::str::from_utf8(&bytes).map_err(|e| e.to_string())?;
        let answer = if sse {
            answer_in_events(text, id)
        } else {
            serde_json::from_str(text).ok()
        };
        answer.ok_or_else(|| format!("{method}: no answer to request {id}"))
    }

    pub async fn call(&mut self, tool: &str, text: &str, n: u64) -> Result<Value, Error> {
        self.rpc(
            "tools/call",
            json!({"name": tool, "arguments": {"text": text, "n": n}}),
        )
        .await
    }

    /// Every tool name of a `tools/list` (first page).
    pub async fn list(&mut self) -> Result<Vec<String>, Error> {
        let v = self.rpc("tools/list", json!({})).await?;
        Ok(v.pointer("/result/tools")
            .and_then(Value::as_array)
            .ok_or("tools/list without tools")?
            .iter()
            .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
            .collect())
    }

    /// The standalone GET stream, held open until the response is dropped.
    pub async fn open_stream(&self) -> Result<reqwest::Response, Error> {
        let mut r = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header(PROTOCOL, &self.proto);
        if let Some(s) = &self.sid {
            r = r.header(SESSION, s);
        }
        let r = r.send().await.map_err(|e| e.to_string())?;
        if !r.status().is_success() {
            return Err(format!("GET stream: HTTP {}", r.status()));
        }
        Ok(r)
    }

    pub async fn close(self) {
        if let Some(s) = &self.sid {
            let _ = self.http.delete(&self.url).header(SESSION, s).send().await;
        }
    }
}

/// The JSON-RPC answer with `id` among the events of a stream.
fn answer_in_events(text: &str, id: u64) -> Option<Value> {
    for event in text.split("\n\n") {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(|d| d.strip_prefix(' ').unwrap_or(d))
            .collect();
        if data.is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(&data.join("\n")) else {
            continue;
        };
        if v.get("id") == Some(&json!(id)) {
            return Some(v);
        }
    }
    None
}

/// `true` when a `tools/call` answer is a tool error (the gateway's denials are).
pub fn is_error(answer: &Value) -> bool {
    answer.pointer("/result/isError") == Some(&json!(true)) || answer.get("error").is_some()
}
