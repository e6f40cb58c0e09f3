//! `crawl_and_watch` against the fakes: a kept session resolves on a list-changed
//! notification over each way one can arrive (the legacy SSE stream, the streamable HTTP
//! standalone GET stream, a 2026-07-28 `subscriptions/listen` stream), ends when the
//! session does, and closes the session when dropped.

use super::*;

const SEC: Duration = Duration::from_secs(5);

/// Tools announce list changes; resources and prompts exist but do not.
fn announcing() -> Value {
    json!({"tools": {"listChanged": true}, "resources": {}, "prompts": {}})
}

/// Wait (bounded) until `cond` holds.
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + SEC;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn watched(url: String, transport: Transport) -> (Catalog, ListChanged) {
    let (c, w) = crawl_and_watch(&target(url, transport), &LOOPBACK)
        .await
        .unwrap();
    (c, w.expect("the server announced list changes: watched"))
}

/// Nothing has fired yet.
async fn quiet(w: &mut ListChanged) {
    assert!(
        tokio::time::timeout(Duration::from_millis(200), w)
            .await
            .is_err(),
        "the watch fired with no notification"
    );
}

#[tokio::test]
async fn an_sse_session_resolves_on_list_changed_and_then_closes() {
    let (addr, f) = start(Behavior {
        capabilities: announcing(),
        ..Behavior::default()
    })
    .await;
    let (c, mut w) = watched(format!("http://{addr}/sse"), Transport::Sse).await;
    assert_eq!(c.tools.len(), 2);
    quiet(&mut w).await;
    assert_eq!(f.open_streams(), 1, "the session is kept");
    f.push("notifications/tools/list_changed");
    assert_eq!(
        tokio::time::timeout(SEC, w).await.unwrap(),
        WatchEnd::ListChanged
    );
    eventually("the SSE stream to close", || f.open_streams() == 0).await;
}

#[tokio::test]
async fn a_streamable_http_session_hears_its_standalone_get_stream() {
    let (addr, f) = start(Behavior {
        capabilities: announcing(),
        session: true,
        ..Behavior::default()
    })
    .await;
    let (c, mut w) = watched(format!("http://{addr}/mcp"), Transport::StreamableHttp).await;
    assert_eq!(c.protocol_version, "2025-11-25");
    // rmcp opens the GET stream by itself once the session is initialized.
    eventually("rmcp's standalone GET stream", || f.open_streams() == 1).await;
    quiet(&mut w).await;
    f.push("notifications/prompts/list_changed");
    assert_eq!(
        tokio::time::timeout(SEC, w).await.unwrap(),
        WatchEnd::ListChanged
    );
    // Resolving closed the session: a DELETE of it.
    eventually("the session DELETE", || *f.deletes.lock().unwrap() == 1).await;
}

#[tokio::test]
async fn a_2026_07_28_server_is_watched_through_subscriptions_listen() {
    let (addr, f) = start(Behavior {
        modern: true,
        capabilities: json!({"tools": {"listChanged": true}, "prompts": {"listChanged": true}}),
        ..Behavior::default()
    })
    .await;
    let (c, mut w) = watched(format!("http://{addr}/mcp"), Transport::StreamableHttp).await;
    assert_eq!(c.protocol_version, "2026-07-28");
    // Only what the server announced is asked for.
    let listen = f.first("subscriptions/listen");
    assert_eq!(
        listen["params"]["notifications"],
        json!({"toolsListChanged": true, "promptsListChanged": true}),
        "{listen}"
    );
    quiet(&mut w).await;
    f.push("notifications/tools/list_changed");
    assert_eq!(
        tokio::time::timeout(SEC, w).await.unwrap(),
        WatchEnd::ListChanged
    );
    eventually("the listen stream to close", || f.open_streams() == 0).await;
}

#[tokio::test]
async fn no_watch_without_announced_changes_and_crawl_keeps_nothing_open() {
    for modern in [false, true] {
        let (addr, f) = start(Behavior {
            modern,
            ..Behavior::default()
        })
        .await;
        let (_, w) = crawl_and_watch(
            &target(format!("http://{addr}/sse"), Transport::Sse),
            &LOOPBACK,
        )
        .await
        .unwrap();
        assert!(w.is_none());
        let (_, w) = crawl_and_watch(
            &target(format!("http://{addr}/mcp"), Transport::StreamableHttp),
            &LOOPBACK,
        )
        .await
        .unwrap();
        assert!(w.is_none());
        assert!(!f.methods().iter().any(|m| m == "subscriptions/listen"));
        eventually("every stream to close", || f.open_streams() == 0).await;
    }
    // `crawl` never keeps a session, whatever the server announces.
    let (addr, f) = start(Behavior {
        capabilities: announcing(),
        ..Behavior::default()
    })
    .await;
    crawl(
        &target(format!("http://{addr}/sse"), Transport::Sse),
        &LOOPBACK,
    )
    .await
    .unwrap();
    eventually("the SSE stream to close", || f.open_streams() == 0).await;
}

#[tokio::test]
async fn dropping_the_watch_closes_the_session() {
    let (addr, f) = start(Behavior {
        capabilities: announcing(),
        ..Behavior::default()
    })
    .await;
    let (_, w) = watched(format!("http://{addr}/sse"), Transport::Sse).await;
    assert_eq!(f.open_streams(), 1);
    drop(w);
    eventually("the SSE stream to close", || f.open_streams() == 0).await;
}

#[tokio::test]
async fn a_session_the_server_ends_ends_the_watch() {
    let (addr, f) = start(Behavior {
        capabilities: announcing(),
        ..Behavior::default()
    })
    .await;
    let (_, mut w) = watched(format!("http://{addr}/sse"), Transport::Sse).await;
    quiet(&mut w).await;
    // The server drops its end of the event stream.
    f.sse.lock().unwrap().clear();
    assert_eq!(
        tokio::time::timeout(SEC, w).await.unwrap(),
        WatchEnd::Closed
    );
}

#[test]
fn the_watch_can_be_spawned() {
    fn spawnable<F: std::future::Future + Send + 'static>(_: F) {}
    let t = target("http://127.0.0.1:1/mcp".into(), Transport::StreamableHttp);
    spawnable(async move {
        if let Ok((_, Some(w))) = crawl_and_watch(&t, &LOOPBACK).await {
            w.await;
        }
    });
}
