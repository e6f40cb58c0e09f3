//! Server-sent events, cut at event boundaries so the gateway can look at (and for
//! `tools/list`, rewrite) each JSON-RPC message without holding a whole stream. Events it
//! does not rewrite go out byte for byte as they came.

use bytes::{Bytes, BytesMut};
use futures::{Stream, StreamExt};
use std::collections::VecDeque;

/// Cuts a byte stream into whole events (each with its terminating blank line).
pub struct Splitter {
    buf: BytesMut,
    /// Where scanning resumes, and whether the line scanned so far is empty.
    pos: usize,
    line_empty: bool,
    max: usize,
}

#[derive(Debug)]
pub struct TooLarge(pub usize);

impl Splitter {
    pub fn new(max: usize) -> Self {
        Splitter {
            buf: BytesMut::new(),
            pos: 0,
            line_empty: true,
            max,
        }
    }

    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<Bytes>) -> Result<(), TooLarge> {
        self.buf.extend_from_slice(chunk);
        loop {
            let b = &self.buf[..];
            let mut i = self.pos;
            let mut cut = None;
            while i < b.len() {
                let len = match b[i] {
                    b'\n' => 1,
                    b'\r' if i + 1 < b.len() => 1 + usize::from(b[i + 1] == b'\n'),
                    // A lone \r at the end: wait to see whether \n follows.
                    b'\r' => break,
                    _ => {
                        self.line_empty = false;
                        i += 1;
                        continue;
                    }
                };
                i += len;
                if self.line_empty {
                    cut = Some(i);
                    break;
                }
                self.line_empty = true;
            }
            self.pos = i;
            match cut {
                Some(end) => {
                    out.push(self.buf.split_to(end).freeze());
                    self.pos = 0;
                    self.line_empty = true;
                }
                None => break,
            }
        }
        if self.buf.len() > self.max {
            return Err(TooLarge(self.buf.len()));
        }
        Ok(())
    }

    /// What is left when the stream ends (an unterminated last event).
    pub fn rest(self) -> Bytes {
        self.buf.freeze()
    }
}

/// The fields of one event that matter here.
#[derive(Debug, Default, PartialEq)]
pub struct Fields {
    pub event: Option<String>,
    pub id: Option<String>,
    pub data: Option<String>,
}

pub fn fields(raw: &[u8]) -> Fields {
    let text = String::from_utf8_lossy(raw);
    let mut f = Fields::default();
    for line in text.split(['\n', '\r']) {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (name, value) = match line.split_once(':') {
            Some((n, v)) => (n, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match name {
            "event" => f.event = Some(value.to_string()),
            "id" => f.id = Some(value.to_string()),
            "data" => match &mut f.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => f.data = Some(value.to_string()),
            },
            _ => {}
        }
    }
    f
}

/// One event with `data` replaced, keeping its name and id.
pub fn rewrite(f: &Fields, data: &str) -> Bytes {
    let mut s = String::with_capacity(data.len() + 64);
    if let Some(e) = &f.event {
        s.push_str("event: ");
        s.push_str(e);
        s.push('\n');
    }
    if let Some(id) = &f.id {
        s.push_str("id: ");
        s.push_str(id);
        s.push('\n');
    }
    for line in data.split('\n') {
        s.push_str("data: ");
        s.push_str(line);
        s.push('\n');
    }
    s.push('\n');
    Bytes::from(s)
}

/// A message event carrying `data`, to inject into a stream.
pub fn message(data: &str) -> Bytes {
    rewrite(
        &Fields {
            event: Some("message".into()),
            ..Default::default()
        },
        data,
    )
}

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Pass `upstream` through event by event; `f` sees each event's data and may return a
/// replacement. An event over `max` bytes ends the stream with an error.
pub fn transform<S, E, F>(
    upstream: S,
    max: usize,
    f: F,
) -> impl Stream<Item = Result<Bytes, BoxError>> + Send
where
    S: Stream<Item = Result<Bytes, E>> + Send + Unpin + 'static,
    E: Into<BoxError>,
    F: FnMut(&str) -> Option<String> + Send + 'static,
{
    struct St<S, F> {
        up: S,
        split: Option<Splitter>,
        queue: VecDeque<Bytes>,
        f: F,
    }
    let st = St {
        up: upstream,
        split: Some(Splitter::new(max)),
        queue: VecDeque::new(),
        f,
    };
    futures::stream::unfold(st, |mut st| async move {
        loop {
            if let Some(b) = st.queue.pop_front() {
                return Some((Ok(b), st));
            }
            let split = st.split.as_mut()?;
            match st.up.next().await {
                Some(Ok(chunk)) => {
                    let mut events = Vec::new();
                    if let Err(TooLarge(n)) = split.push(&chunk, &mut events) {
                        st.split = None;
                        let e: BoxError = format!("an event of over {n} bytes").into();
                        return Some((Err(e), st));
                    }
                    for raw in events {
                        let fl = fields(&raw);
                        let new = fl.data.as_deref().and_then(&mut st.f);
                        st.queue.push_back(match new {
                            Some(d) => rewrite(&fl, &d),
                            None => raw,
                        });
                    }
                }
                Some(Err(e)) => {
                    st.split = None;
                    return Some((Err(e.into()), st));
                }
                None => {
                    let rest = st.split.take().map(Splitter::rest).unwrap_or_default();
                    if !rest.is_empty() {
                        st.queue.push_back(rest);
                    }
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(chunks: &[&[u8]]) -> Vec<Bytes> {
        let mut s = Splitter::new(1 << 20);
        let mut out = Vec::new();
        for c in chunks {
            s.push(c, &mut out).unwrap();
        }
        out
    }

    #[test]
    fn cuts_on_every_line_ending_and_across_chunks() {
        let out = split_all(&[
            b"event: message\ndata: {\"a\"",
            b":1}\n\nda",
            b"ta: x\r\n\r\ndata: y\r",
            b"\r",
            b"data: z\n\n",
        ]);
        assert_eq!(out.len(), 4);
        assert_eq!(fields(&out[0]).data.as_deref(), Some("{\"a\":1}"));
        assert_eq!(fields(&out[0]).event.as_deref(), Some("message"));
        assert_eq!(fields(&out[1]).data.as_deref(), Some("x"));
        assert_eq!(fields(&out[2]).data.as_deref(), Some("y"));
        // Byte for byte.
        assert_eq!(&out[1][..], b"data: x\r\n\r\n");
    }

    #[test]
    fn multi_line_data_and_comments() {
        let out = split_all(&[b": ping\n\nid: 7\ndata: a\ndata: b\n\n"]);
        assert_eq!(out.len(), 2);
        let f = fields(&out[1]);
        assert_eq!(f.data.as_deref(), Some("a\nb"));
        assert_eq!(f.id.as_deref(), Some("7"));
        assert_eq!(
            fields(&rewrite(&f, "c")),
            Fields {
                event: None,
                id: Some("7".into()),
                data: Some("c".into())
            }
        );
    }

    #[test]
    fn an_endless_event_is_refused() {
        let mut s = Splitter::new(100);
        let mut out = Vec::new();
        assert!(s.push(&[b'x'; 101], &mut out).is_err());
    }

    #[tokio::test]
    async fn transform_rewrites_only_what_f_returns() {
        let up = futures::stream::iter(vec![
            Ok::<_, std::io::Error>(Bytes::from_static(b"data: keep\n\ndata: change\n\n")),
            Ok(Bytes::from_static(b"data: tail")),
        ]);
        let s = transform(up, 1024, |d| (d == "change").then(|| "changed".to_string()));
        let all: Vec<Bytes> = s.map(|r| r.unwrap()).collect().await;
        let joined: Vec<u8> = all.concat();
        assert_eq!(
            String::from_utf8(joined).unwrap(),
            "data: keep\n\ndata: changed\n\ndata: tail"
        );
    }
}
