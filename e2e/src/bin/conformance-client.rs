//! The client side of the official MCP conformance suite (`@modelcontextprotocol/conformance`),
//! driven by `e2e/conformance/run.sh`.
//!
//! The suite starts a test server per scenario and runs this binary with the server URL as
//! the last argument, the scenario name in `MCP_CONFORMANCE_SCENARIO` and, where a
//! scenario needs more (client credentials), a JSON object in `MCP_CONFORMANCE_CONTEXT`.
//! It judges the client by what its test server saw; this binary's exit code says whether
//! the client itself got what it expected (a non-zero exit fails the scenario).
//!
//! Handshake and listing always go through mcpgov's own crawler
//! ([`mcpgov::crawler::crawl`]), so a scenario's result speaks about the crawler. The
//! crawler never calls a tool, so the scenarios that need a `tools/call` open a second,
//! plain rmcp session for it here, over the same streamable HTTP transport the crawler
//! uses; the OAuth client-credentials grant is likewise done here, and its token handed to
//! the crawler as a configured header, the way a Secret would hand it one.
//!
//! `CONFORMANCE_BASELINE=initialize` (run.sh `--baseline`) swaps the crawler out of the
//! handshake-and-list step for a plain rmcp session with the legacy `initialize`
//! handshake only: a scenario that fails with the crawler and passes in the baseline
//! fails because of the crawler's own choices (its `server/discover` probe first), not
//! because of rmcp's transport. Results in that mode do not speak about the crawler.
//!
//! Exit codes: 0 the scenario went as expected, 1 it did not, 2 usage, 3 a scenario this
//! client does not implement (run.sh counts it as failed: some scenarios would pass a
//! client that does nothing).

use base64::Engine as _;
use mcpgov::crawler::{self, CrawlError, NetPolicy, Target, Transport};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, Implementation, InitializeRequestParams,
    ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, RoleClient, RunningService, serve_client_with_lifecycle};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Bound on each request of a crawl, a tool call or an OAuth request. The suite's own
/// limit on the whole client run is 30 s (run.sh passes `--timeout 30000`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Bound on one crawl.
const CRAWL_DEADLINE: Duration = Duration::from_secs(10);
/// Bound on one tool call, reconnections included.
const CALL_DEADLINE: Duration = Duration::from_secs(8);

/// What one step reported; a scenario fails when any step failed.
struct Steps {
    failed: Vec<String>,
}

impl Steps {
    fn ok(&self, what: &str, detail: impl std::fmt::Display) {
        eprintln!("conformance-client: ok   {what}: {detail}");
    }

    fn fail(&mut self, what: &str, why: impl std::fmt::Display) {
        eprintln!("conformance-client: FAIL {what}: {why}");
        self.failed.push(what.to_owned());
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let url = match std::env::args().skip(1).last() {
        Some(u) if u.starts_with("http://") || u.starts_with("https://") => u,
        _ => {
            eprintln!(
                "usage: conformance-client <server-url>  (MCP_CONFORMANCE_SCENARIO names the scenario)"
            );
            return ExitCode::from(2);
        }
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or(Value::Null);
    eprintln!("conformance-client: scenario {scenario:?} against {url}");
    // reqwest is built without a bundled crypto provider (the crawler installs the same
    // one on its first crawl; the OAuth requests here may come first).
    let _ = rustls::crypto::ring::default_provider().install_default();

    let mut steps = Steps { failed: Vec::new() };
    let started = Instant::now();
    match scenario.as_str() {
        "initialize" => {
            crawl_step(&mut steps, &url, Vec::new(), None).await;
        }
        "tools_call" => {
            crawl_step(&mut steps, &url, Vec::new(), Some("add_numbers")).await;
            let args = json!({ "a": 5, "b": 3 });
            if let Some(text) = call_step(&mut steps, &url, "add_numbers", args).await
                && !text.split(|c: char| !c.is_ascii_digit()).any(|n| n == "8")
            {
                steps.fail(
                    "add_numbers result",
                    format!("expected the sum 8 in {text:?}"),
                );
            }
        }
        "sse-retry" => {
            crawl_step(&mut steps, &url, Vec::new(), Some("test_reconnection")).await;
            // The server answers this call with an SSE stream it closes after a priming
            // event (`retry: 500`); the answer comes on the GET the client must resume with.
            call_step(&mut steps, &url, "test_reconnection", json!({})).await;
        }
        "auth/client-credentials-basic" => {
            client_credentials_basic(&mut steps, &url, &context).await;
        }
        other => {
            eprintln!(
                "conformance-client: scenario {other:?} is not supported by this client \
                 (supported: initialize, tools_call, sse-retry, auth/client-credentials-basic)"
            );
            return ExitCode::from(3);
        }
    }
    let took = started.elapsed().as_millis();
    if steps.failed.is_empty() {
        eprintln!("conformance-client: scenario {scenario} done in {took} ms");
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "conformance-client: scenario {scenario} failed in {took} ms: {}",
            steps.failed.join(", ")
        );
        ExitCode::FAILURE
    }
}

fn target(url: &str, headers: Vec<(String, String)>) -> Target {
    Target {
        url: url.to_owned(),
        transport: Transport::StreamableHttp,
        headers,
        request_timeout: REQUEST_TIMEOUT,
        deadline: CRAWL_DEADLINE,
        max_tools: 1000,
        max_bytes: 1 << 20,
    }
}

/// The suite's servers listen on localhost: loopback allowed, nothing else widened.
fn net() -> NetPolicy {
    NetPolicy {
        allow_loopback: true,
        allow_private: false,
    }
}

/// One crawl through mcpgov's crawler; `expect_tool` must be in its catalog.
async fn crawl_step(
    steps: &mut Steps,
    url: &str,
    headers: Vec<(String, String)>,
    expect_tool: Option<&str>,
) {
    if baseline() {
        baseline_list_step(steps, url, headers, expect_tool).await;
        return;
    }
    match crawler::crawl(&target(url, headers), &net()).await {
        Ok(catalog) => {
            let names: Vec<&str> = catalog.tools.iter().map(|t| t.name.as_str()).collect();
            steps.ok(
                "crawl",
                format_args!(
                    "protocol {}, server {:?}, tools {:?}, {} resources, {} templates, \
                     not implemented {:?}, {} pages",
                    catalog.protocol_version,
                    catalog.server_name,
                    names,
                    catalog.resources.len(),
                    catalog.resource_templates.len(),
                    catalog.not_implemented,
                    catalog.pages
                ),
            );
            if let Some(want) = expect_tool
                && !names.contains(&want)
            {
                steps.fail("crawl", format!("the catalog has no tool {want:?}"));
            }
        }
        Err(e) => steps.fail("crawl", format_args!("{} ({e})", e.reason())),
    }
}

/// Call one tool over a plain rmcp session (the crawler has no way to); returns the text
/// of the result's content.
async fn call_step(steps: &mut Steps, url: &str, tool: &str, args: Value) -> Option<String> {
    let what = format!("tools/call {tool}");
    let result = tokio::time::timeout(CALL_DEADLINE, call_tool(url, tool, args)).await;
    match result {
        Ok(Ok(text)) => {
            steps.ok(&what, format_args!("{text:?}"));
            Some(text)
        }
        Ok(Err(e)) => {
            steps.fail(&what, e);
            None
        }
        Err(_) => {
            steps.fail(&what, format_args!("no result within {CALL_DEADLINE:?}"));
            None
        }
    }
}

async fn call_tool(url: &str, tool: &str, args: Value) -> Result<String, String> {
    let running = open_session(url, &[]).await?;
    let arguments: Map<String, Value> = match args {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let called = running
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments))
        .await;
    let _ = running.cancel().await;
    let result = called.map_err(|e| format!("call: {e}"))?;
    let value = serde_json::to_value(&result).map_err(|e| format!("result: {e}"))?;
    if value.get("isError") == Some(&Value::Bool(true)) {
        return Err(format!("the tool reported an error: {value}"));
    }
    let text: Vec<&str> = value
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    Ok(text.join("\n"))
}

/// A plain rmcp session with the legacy `initialize` handshake (2025-11-25), over the
/// streamable HTTP transport with the crawler's settings that matter here: one session,
/// no silent re-initialization, bounded control requests.
async fn open_session(
    url: &str,
    headers: &[(String, String)],
) -> Result<RunningService<RoleClient, InitializeRequestParams>, String> {
    let mut defaults = reqwest::header::HeaderMap::new();
    for (name, value) in headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| format!("header name {name:?}: {e}"))?;
        let mut value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| format!("header {name}: not a valid value"))?;
        value.set_sensitive(true);
        defaults.append(name, value);
    }
    let http = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .default_headers(defaults)
        .connect_timeout(REQUEST_TIMEOUT)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let config = StreamableHttpClientTransportConfig::with_uri(url)
        .reinit_on_expired_session(false)
        .control_request_timeout(REQUEST_TIMEOUT);
    let transport = StreamableHttpClientTransport::with_client(http, config);
    let hello = InitializeRequestParams::new(
        ClientCapabilities::default(),
        Implementation::new("mcpgov-conformance-client", env!("CARGO_PKG_VERSION")),
    )
    .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
    let handshake = serve_client_with_lifecycle(hello, transport, ClientLifecycleMode::Initialize);
    match tokio::time::timeout(REQUEST_TIMEOUT, handshake).await {
        Ok(Ok(running)) => Ok(running),
        Ok(Err(e)) => Err(format!("handshake: {e}")),
        Err(_) => Err(format!("handshake: no answer within {REQUEST_TIMEOUT:?}")),
    }
}

/// Whether the baseline (no crawler) replaces the crawl step; see the module comment.
fn baseline() -> bool {
    std::env::var("CONFORMANCE_BASELINE").is_ok_and(|v| v == "initialize")
}

/// The baseline's stand-in for a crawl: `initialize`, then `tools/list` paged to the end.
async fn baseline_list_step(
    steps: &mut Steps,
    url: &str,
    headers: Vec<(String, String)>,
    expect_tool: Option<&str>,
) {
    let what = "baseline list (rmcp initialize, not the crawler)";
    let listed = async {
        let running = open_session(url, &headers).await?;
        let version = running
            .peer_info()
            .map(|i| i.protocol_version.as_str().to_owned())
            .unwrap_or_default();
        let tools = tokio::time::timeout(CALL_DEADLINE, running.list_all_tools()).await;
        let _ = running.cancel().await;
        let tools = tools
            .map_err(|_| format!("tools/list: no answer within {CALL_DEADLINE:?}"))?
            .map_err(|e| format!("tools/list: {e}"))?;
        let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        Ok::<_, String>((version, names))
    };
    match listed.await {
        Ok((version, names)) => {
            steps.ok(what, format_args!("protocol {version}, tools {names:?}"));
            if let Some(want) = expect_tool
                && !names.iter().any(|n| n == want)
            {
                steps.fail(what, format!("no tool {want:?}"));
            }
        }
        Err(e) => steps.fail(what, e),
    }
}

/// OAuth client credentials with `client_secret_basic` (the ext-auth client-credentials
/// extension): the crawler meets the 401 and its challenge, this client finds the
/// authorization server through the protected resource metadata, takes a token at its
/// token endpoint, and the crawler crawls again with that token as a configured header.
async fn client_credentials_basic(steps: &mut Steps, url: &str, context: &Value) {
    let (Some(client_id), Some(client_secret)) = (
        context.get("client_id").and_then(Value::as_str),
        context.get("client_secret").and_then(Value::as_str),
    ) else {
        steps.fail(
            "context",
            "MCP_CONFORMANCE_CONTEXT has no client_id and client_secret",
        );
        return;
    };

    // 1. Unauthenticated, the crawler must fail with the server's challenge.
    let challenge = match crawler::crawl(&target(url, Vec::new()), &net()).await {
        Err(CrawlError::Unauthorized {
            status,
            challenge: Some(c),
        }) => {
            steps.ok("unauthenticated crawl", format_args!("HTTP {status}: {c}"));
            c
        }
        Err(e) => {
            steps.fail(
                "unauthenticated crawl",
                format_args!("expected 401 with a challenge, got {} ({e})", e.reason()),
            );
            return;
        }
        Ok(_) => {
            steps.fail(
                "unauthenticated crawl",
                "the server let an unauthenticated client crawl",
            );
            return;
        }
    };

    let token = match oauth::client_credentials(url, &challenge, client_id, client_secret).await {
        Ok(t) => {
            steps.ok(
                "token",
                format_args!(
                    "client_credentials grant at {} (client_secret_basic)",
                    t.token_endpoint
                ),
            );
            t
        }
        Err(e) => {
            steps.fail("token", e);
            return;
        }
    };

    // 2. With the token as a configured header, the crawl must succeed.
    let headers = vec![(
        "Authorization".to_owned(),
        format!("Bearer {}", token.access_token),
    )];
    crawl_step(steps, url, headers, None).await;
}

/// The smallest OAuth 2.1 client this scenario needs: protected resource metadata
/// (RFC 9728), authorization server metadata (RFC 8414, then OpenID discovery) and a
/// `client_credentials` token request authenticated with HTTP Basic (RFC 6749 2.3.1).
/// Neither the secret nor the token is ever printed.
mod oauth {
    use super::*;

    pub struct Token {
        pub access_token: String,
        pub token_endpoint: String,
    }

    pub async fn client_credentials(
        resource: &str,
        challenge: &str,
        client_id: &str,
        client_secret: &str,
    ) -> Result<Token, String> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(REQUEST_TIMEOUT)
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;

        // Protected resource metadata: where the challenge says, else the well-known
        // locations (path-aware first).
        let prm_urls = match auth_param(challenge, "resource_metadata") {
            Some(u) => vec![u],
            None => well_known(resource, "oauth-protected-resource")?,
        };
        let (prm_url, prm) = first_json(&http, &prm_urls).await?;
        let prm_resource = prm.get("resource").and_then(Value::as_str).unwrap_or("");
        if !same_resource(prm_resource, resource) {
            return Err(format!(
                "{prm_url} names resource {prm_resource:?}, not the server {resource:?}"
            ));
        }
        let issuer = prm
            .get("authorization_servers")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{prm_url} names no authorization server"))?;

        let mut as_urls = well_known(issuer, "oauth-authorization-server")?;
        as_urls.extend(well_known(issuer, "openid-configuration")?);
        let (as_url, meta) = first_json(&http, &as_urls).await?;
        let token_endpoint = meta
            .get("token_endpoint")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{as_url} has no token_endpoint"))?
            .to_owned();
        if let Some(grants) = meta.get("grant_types_supported").and_then(Value::as_array)
            && !grants.iter().any(|g| g == "client_credentials")
        {
            return Err(format!(
                "{as_url} does not support the client_credentials grant"
            ));
        }
        if let Some(methods) = meta
            .get("token_endpoint_auth_methods_supported")
            .and_then(Value::as_array)
            && !methods.iter().any(|m| m == "client_secret_basic")
        {
            return Err(format!("{as_url} does not accept client_secret_basic"));
        }

        // RFC 6749 2.3.1: id and secret are form-encoded before the Basic encoding.
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            form_encode(client_id),
            form_encode(client_secret)
        ));
        let mut body = String::from("grant_type=client_credentials");
        body.push_str("&resource=");
        body.push_str(&form_encode(prm_resource));
        if let Some(scope) = auth_param(challenge, "scope") {
            body.push_str("&scope=");
            body.push_str(&form_encode(&scope));
        }
        let response = http
            .post(&token_endpoint)
            .header("Authorization", format!("Basic {basic}"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| format!("token request to {token_endpoint}: {e}"))?;
        let status = response.status();
        let reply: Value = response
            .json()
            .await
            .map_err(|e| format!("token response from {token_endpoint}: {e}"))?;
        if !status.is_success() {
            let error = reply.get("error").and_then(Value::as_str).unwrap_or("?");
            return Err(format!(
                "token endpoint {token_endpoint} answered HTTP {status}: {error}"
            ));
        }
        let token_type = reply.get("token_type").and_then(Value::as_str);
        if !token_type.is_some_and(|t| t.eq_ignore_ascii_case("bearer")) {
            return Err(format!(
                "token endpoint gave token_type {token_type:?}, not Bearer"
            ));
        }
        let access_token = reply
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
            .ok_or("the token response has no access_token")?
            .to_owned();
        Ok(Token {
            access_token,
            token_endpoint,
        })
    }

    /// GET each URL in turn; the first 200 with a JSON object wins.
    async fn first_json(
        http: &reqwest::Client,
        urls: &[String],
    ) -> Result<(String, Value), String> {
        let mut tried = Vec::new();
        for u in urls {
            match http
                .get(u)
                .header("Accept", "application/json")
                .send()
                .await
            {
                Ok(r) if r.status().is_success() => match r.json::<Value>().await {
                    Ok(v) if v.is_object() => return Ok((u.clone(), v)),
                    Ok(_) => tried.push(format!("{u}: not a JSON object")),
                    Err(e) => tried.push(format!("{u}: {e}")),
                },
                Ok(r) => tried.push(format!("{u}: HTTP {}", r.status())),
                Err(e) => tried.push(format!("{u}: {e}")),
            }
        }
        Err(format!("no metadata found: {}", tried.join("; ")))
    }

    /// The well-known URLs for `base`: with a path, the suffix goes between the origin
    /// and the path (RFC 8414 3.1, RFC 9728 3.1), then at the root; OpenID discovery also
    /// appends it to the path.
    pub(super) fn well_known(base: &str, suffix: &str) -> Result<Vec<String>, String> {
        let (origin, path) = split_origin(base)?;
        let path = path.trim_end_matches('/');
        let mut urls = Vec::new();
        if !path.is_empty() {
            urls.push(format!("{origin}/.well-known/{suffix}{path}"));
            if suffix == "openid-configuration" {
                urls.push(format!("{origin}{path}/.well-known/{suffix}"));
            }
        }
        urls.push(format!("{origin}/.well-known/{suffix}"));
        Ok(urls)
    }

    /// `scheme://authority` and the path (query and fragment dropped).
    fn split_origin(u: &str) -> Result<(&str, &str), String> {
        let rest_at = u
            .find("://")
            .map(|i| i + 3)
            .ok_or_else(|| format!("not an absolute URL: {u}"))?;
        let path_at = u[rest_at..]
            .find(['/', '?', '#'])
            .map_or(u.len(), |i| rest_at + i);
        let path = &u[path_at..];
        let path = &path[..path.find(['?', '#']).unwrap_or(path.len())];
        Ok((&u[..path_at], path))
    }

    /// RFC 9728 3.3: the metadata's resource must be the server's URL (a trailing slash
    /// aside).
    fn same_resource(a: &str, b: &str) -> bool {
        !a.is_empty() && a.trim_end_matches('/') == b.trim_end_matches('/')
    }

    /// One parameter of a `WWW-Authenticate` challenge, quoted or not.
    pub(super) fn auth_param(challenge: &str, name: &str) -> Option<String> {
        let mut search = challenge;
        while let Some(i) = search.find(name) {
            let before = search[..i].chars().next_back();
            let after = &search[i + name.len()..];
            let boundary = before.is_none_or(|c| c == ' ' || c == ',');
            if let (true, Some(value)) = (boundary, after.trim_start().strip_prefix('=')) {
                let value = value.trim_start();
                return Some(match value.strip_prefix('"') {
                    Some(q) => {
                        let mut out = String::new();
                        let mut chars = q.chars();
                        while let Some(c) = chars.next() {
                            match c {
                                '"' => break,
                                '\\' => out.extend(chars.next()),
                                c => out.push(c),
                            }
                        }
                        out
                    }
                    None => value
                        .split([',', ' '])
                        .next()
                        .unwrap_or_default()
                        .to_owned(),
                });
            }
            search = &search[i + name.len()..];
        }
        None
    }

    /// `application/x-www-form-urlencoded` for one value.
    pub(super) fn form_encode(s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        for b in s.bytes() {
            match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                    out.push(b as char)
                }
                b' ' => out.push('+'),
                _ => out.push_str(&format!("%{b:02X}")),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::oauth::{auth_param, form_encode, well_known};

    #[test]
    fn challenge_parameters() {
        let c = r#"Bearer error="invalid_token", error_description="Missing Authorization header", resource_metadata="http://localhost:1/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            auth_param(c, "resource_metadata").as_deref(),
            Some("http://localhost:1/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(auth_param(c, "error").as_deref(), Some("invalid_token"));
        assert_eq!(auth_param(c, "scope"), None);
        assert_eq!(
            auth_param(r#"Bearer scope=read, x="a\"b""#, "scope").as_deref(),
            Some("read")
        );
        assert_eq!(
            auth_param(r#"Bearer x="a\"b""#, "x").as_deref(),
            Some(r#"a"b"#)
        );
        // A name inside another parameter's name is not a match.
        assert_eq!(auth_param(r#"Bearer myscope="a""#, "scope"), None);
    }

    #[test]
    fn well_known_locations() {
        assert_eq!(
            well_known("http://h:1/mcp", "oauth-protected-resource").unwrap(),
            [
                "http://h:1/.well-known/oauth-protected-resource/mcp",
                "http://h:1/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            well_known("http://h:1", "oauth-authorization-server").unwrap(),
            ["http://h:1/.well-known/oauth-authorization-server"]
        );
        assert_eq!(
            well_known("http://h:1/tenant1/", "openid-configuration").unwrap(),
            [
                "http://h:1/.well-known/openid-configuration/tenant1",
                "http://h:1/tenant1/.well-known/openid-configuration",
                "http://h:1/.well-known/openid-configuration"
            ]
        );
        assert!(well_known("no-scheme", "x").is_err());
    }

    #[test]
    fn form_encoding() {
        assert_eq!(form_encode("abc-._*09"), "abc-._*09");
        assert_eq!(form_encode("a b:c/é"), "a+b%3Ac%2F%C3%A9");
    }
}
