//! `audit verify`: walks one chain through files given oldest first and names the first
//! line that is not what the writer wrote.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::chain::TAIL_WINDOW;
use super::record::{Checked, GENESIS, KIND_CHAIN_BREAK, MAX_LINE_BYTES, check_line};

/// A point of the chain known from elsewhere (the gateway's exported head): the record
/// with this `seq` must be present and, when a hash is given, have it. This is what
/// makes deleting trailing records, or rewriting the whole chain, detectable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub seq: u64,
    pub hash: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    pub anchors: Vec<Anchor>,
    /// The first record must be seq 0 (no rotated file was dropped or left out).
    pub from_genesis: bool,
    /// A damaged tail the gateway recorded with a `chainBreak` is a failure too.
    pub strict: bool,
}

/// A good chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub files: usize,
    pub records: u64,
    pub first_seq: Option<u64>,
    pub last_seq: Option<u64>,
    /// Hash of the last record.
    pub head: Option<String>,
    pub starts_at_genesis: bool,
    /// Damage the gateway found on reopening and recorded, after which the chain goes on
    /// from the last good record.
    pub recorded_breaks: Vec<RecordedBreak>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedBreak {
    /// The `chainBreak` record.
    pub file: PathBuf,
    pub line: u64,
    /// Lines skipped before it, and the first of them.
    pub damaged_lines: u64,
    pub first_damaged: Option<(PathBuf, u64)>,
}

/// The first line that is not what the writer wrote. `line` counts from 1; a missing
/// trailing record is reported one past the last line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Break {
    pub file: PathBuf,
    pub line: u64,
    pub what: String,
}

impl std::fmt::Display for Break {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file.display(), self.line, self.what)
    }
}

impl std::error::Error for Break {}

/// Verifies files holding one chain, oldest first (`FILE.3 FILE.2 FILE.1 FILE`).
pub fn verify<P: AsRef<Path>>(files: &[P]) -> Result<Summary, Break> {
    verify_with(files, &VerifyOptions::default())
}

pub fn verify_with<P: AsRef<Path>>(files: &[P], opts: &VerifyOptions) -> Result<Summary, Break> {
    let mut v = Verifier::new(opts);
    for f in files {
        let path = f.as_ref();
        let reader: Box<dyn Read> = if path == Path::new("-") {
            Box::new(std::io::stdin().lock())
        } else {
            Box::new(File::open(path).map_err(|e| Break {
                file: path.to_path_buf(),
                line: 0,
                what: format!("cannot open: {e}"),
            })?)
        };
        v.file(path, reader)?;
    }
    v.finish()
}

struct Good {
    seq: u64,
    hash: String,
}

struct Damage {
    file: PathBuf,
    line: u64,
    what: String,
    lines: u64,
    bytes: usize,
}

struct Verifier<'a> {
    opts: &'a VerifyOptions,
    summary: Summary,
    last: Option<Good>,
    damage: Option<Damage>,
    end: (PathBuf, u64),
}

impl<'a> Verifier<'a> {
    fn new(opts: &'a VerifyOptions) -> Self {
        Verifier {
            opts,
            summary: Summary {
                files: 0,
                records: 0,
                first_seq: None,
                last_seq: None,
                head: None,
                starts_at_genesis: false,
                recorded_breaks: Vec::new(),
            },
            last: None,
            damage: None,
            end: (PathBuf::new(), 0),
        }
    }

    fn file(&mut self, path: &Path, reader: Box<dyn Read + '_>) -> Result<(), Break> {
        self.summary.files += 1;
        self.end = (path.to_path_buf(), 0);
        let mut reader = BufReader::new(reader);
        let mut buf = Vec::with_capacity(4096);
        let mut line_no = 0u64;
        let at = |line: u64, what: String| Break {
            file: path.to_path_buf(),
            line,
            what,
        };
        loop {
            buf.clear();
            // Never more than one line's worth in memory, whatever the file holds.
            let n = (&mut reader)
                .take(MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut buf)
                .map_err(|e| at(line_no + 1, format!("read error: {e}")))?;
            if n == 0 {
                break;
            }
            line_no += 1;
            self.end = (path.to_path_buf(), line_no);
            let complete = buf.last() == Some(&b'\n');
            if complete {
                buf.pop();
            } else if buf.len() > MAX_LINE_BYTES {
                return Err(at(
                    line_no,
                    format!("line longer than {MAX_LINE_BYTES} bytes"),
                ));
            }
            let checked = if complete {
                check_line(&buf)
            } else {
                Err("no newline at the end of the file: the last line was truncated".into())
            };
            match checked {
                Ok(c) => self.record(c, path, line_no)?,
                Err(what) => self.damaged(path, line_no, what, buf.len())?,
            }
        }
        Ok(())
    }

    /// Damage is a break unless the gateway's next record says it saw it (see `record`);
    /// it is only looked past within the writer's own tail window.
    fn damaged(&mut self, path: &Path, line: u64, what: String, len: usize) -> Result<(), Break> {
        let d = self.damage.get_or_insert_with(|| Damage {
            file: path.to_path_buf(),
            line,
            what,
            lines: 0,
            bytes: 0,
        });
        d.lines += 1;
        d.bytes += len + 1;
        let beyond_window = d.bytes > TAIL_WINDOW;
        if beyond_window {
            return Err(self
                .damage
                .take()
                .map(Damage::into_break)
                .expect("just set"));
        }
        Ok(())
    }

    fn record(&mut self, c: Checked, path: &Path, line: u64) -> Result<(), Break> {
        let at = |what: String| Break {
            file: path.to_path_buf(),
            line,
            what,
        };
        let is_break_record = c.kind == KIND_CHAIN_BREAK;
        if let Some(d) = self.damage.take() {
            // Looked past only when the gateway recorded it: a chainBreak that continues
            // from the last good record and names it.
            let continues = self.last.as_ref().is_some_and(|g| {
                is_break_record
                    && c.seq == g.seq + 1
                    && c.prev == g.hash
                    && c.last_good_hash.as_deref() == Some(g.hash.as_str())
            });
            if !continues {
                return Err(d.into_break());
            }
            self.summary.recorded_breaks.push(RecordedBreak {
                file: path.to_path_buf(),
                line,
                damaged_lines: d.lines,
                first_damaged: Some((d.file, d.line)),
            });
        } else if is_break_record {
            self.summary.recorded_breaks.push(RecordedBreak {
                file: path.to_path_buf(),
                line,
                damaged_lines: 0,
                first_damaged: None,
            });
        }
        match &self.last {
            Some(g) => {
                if c.seq != g.seq + 1 {
                    return Err(at(format!(
                        "seq {} follows seq {}: a record was deleted, inserted or reordered",
                        c.seq, g.seq
                    )));
                }
                if c.prev != g.hash {
                    return Err(at(format!(
                        "prev {} is not the hash of the record before ({})",
                        c.prev, g.hash
                    )));
                }
            }
            None => {
                if c.seq == 0 && c.prev != GENESIS {
                    return Err(at("seq 0 whose prev is not the genesis value".into()));
                }
                if self.opts.from_genesis && c.seq != 0 {
                    return Err(at(format!(
                        "the chain starts at seq {}, not 0: earlier records are missing",
                        c.seq
                    )));
                }
                self.summary.first_seq = Some(c.seq);
                self.summary.starts_at_genesis = c.seq == 0;
            }
        }
        for a in &self.opts.anchors {
            if a.seq == c.seq
                && let Some(h) = &a.hash
                && *h != c.hash
            {
                return Err(at(format!(
                    "seq {} has hash {}, the anchor says {h}: the chain was rewritten",
                    c.seq, c.hash
                )));
            }
        }
        self.summary.records += 1;
        self.summary.last_seq = Some(c.seq);
        self.summary.head = Some(c.hash.clone());
        self.last = Some(Good {
            seq: c.seq,
            hash: c.hash,
        });
        Ok(())
    }

    fn finish(mut self) -> Result<Summary, Break> {
        if let Some(d) = self.damage.take() {
            return Err(d.into_break());
        }
        let (file, last_line) = self.end.clone();
        for a in &self.opts.anchors {
            let present = match (self.summary.first_seq, self.summary.last_seq) {
                (Some(first), Some(last)) => (first..=last).contains(&a.seq),
                _ => false,
            };
            if !present {
                let what = match self.summary.last_seq {
                    Some(last) if a.seq > last => format!(
                        "the log ends at seq {last} but the anchor is seq {}: trailing records were removed",
                        a.seq
                    ),
                    Some(_) => format!("anchor seq {} is before the first record given", a.seq),
                    None => format!("no records, but the anchor is seq {}", a.seq),
                };
                return Err(Break {
                    file,
                    line: last_line + 1,
                    what,
                });
            }
        }
        if self.opts.strict
            && let Some(b) = self.summary.recorded_breaks.first()
        {
            return Err(Break {
                file: b.file.clone(),
                line: b.line,
                what: "a chainBreak record (strict mode)".into(),
            });
        }
        Ok(self.summary)
    }
}

impl Damage {
    fn into_break(self) -> Break {
        Break {
            file: self.file,
            line: self.line,
            what: self.what,
        }
    }
}

const USAGE: &str =
    "usage: audit verify [--anchor SEQ[:HASH]]... [--from-genesis] [--strict] FILE...
  Verifies a hash-chained audit log. Give rotated files oldest first
  (FILE.3 FILE.2 FILE.1 FILE); `-` reads standard input.
  --anchor SEQ[:HASH]  record SEQ must be present (and have HASH): detects removed
                       trailing records and a rewritten chain; take SEQ and HASH from
                       the gateway's exported head
  --from-genesis       the first record must be seq 0 (no older file left out)
  --strict             a recorded chainBreak fails verification too";

/// The `audit verify` subcommand: `args` are the words after `verify`. Exit 0 for a
/// good chain, 1 for a break, 2 for a usage error.
pub fn verify_main<I, S>(args: I) -> ExitCode
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut opts = VerifyOptions::default();
    let mut files = Vec::new();
    let mut args = args.into_iter().map(Into::into);
    let mut only_files = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            _ if only_files => files.push(PathBuf::from(a)),
            "--" => only_files = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--from-genesis" => opts.from_genesis = true,
            "--strict" => opts.strict = true,
            "--anchor" => match args.next().as_deref().and_then(parse_anchor) {
                Some(anchor) => opts.anchors.push(anchor),
                None => return usage("--anchor takes SEQ or SEQ:sha256:HEX"),
            },
            s if s.starts_with("--") => return usage(&format!("unknown flag {s}")),
            _ => files.push(PathBuf::from(a)),
        }
    }
    if files.is_empty() {
        return usage("no file given");
    }
    match verify_with(&files, &opts) {
        Ok(s) => {
            println!("{}", describe(&s));
            ExitCode::SUCCESS
        }
        Err(b) => {
            println!("BROKEN at {b}");
            ExitCode::from(1)
        }
    }
}

fn usage(why: &str) -> ExitCode {
    eprintln!("audit verify: {why}\n{USAGE}");
    ExitCode::from(2)
}

fn parse_anchor(s: &str) -> Option<Anchor> {
    let (seq, hash) = match s.split_once(':') {
        Some((seq, hash)) => (seq, Some(hash)),
        None => (s, None),
    };
    let hash = match hash {
        Some(h) if h.len() == 71 && h.starts_with("sha256:") => Some(h.to_string()),
        Some(_) => return None,
        None => None,
    };
    Some(Anchor {
        seq: seq.parse().ok()?,
        hash,
    })
}

/// The human summary of a good chain.
pub fn describe(s: &Summary) -> String {
    let mut out = match (s.first_seq, s.last_seq, &s.head) {
        (Some(first), Some(last), Some(head)) => format!(
            "ok: {} records in {} file(s), seq {first}..{last}, head {head}",
            s.records, s.files
        ),
        _ => format!("ok: no records in {} file(s)", s.files),
    };
    if s.first_seq.is_some() && !s.starts_at_genesis {
        out.push_str("\nnote: the chain does not start at seq 0: older records were rotated away or not given");
    }
    for b in &s.recorded_breaks {
        let from = match &b.first_damaged {
            Some((f, l)) => format!(
                " after {} damaged line(s) from {}:{l}",
                b.damaged_lines,
                f.display()
            ),
            None => String::new(),
        };
        out.push_str(&format!(
            "\nwarning: the gateway recorded a chain break at {}:{}{from}",
            b.file.display(),
            b.line
        ));
    }
    out
}
