//! The writer: appends sealed lines, continues the chain across restarts (from the
//! file's tail) and rotation (from the rotated file's tail), and records a damaged tail
//! instead of writing over it silently.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::key::ArgKey;
use super::record::{
    Checked, DecisionRecord, GENESIS, MAX_LINE_BYTES, chain_break_fields, check_line,
    decision_fields, seal,
};

/// How much of a file's end is read to find where the chain stands: one whole line of
/// the largest size plus a torn one always fits. Damage larger than this is not looked
/// past (the verifier uses the same bound).
pub(crate) const TAIL_WINDOW: usize = 2 * (MAX_LINE_BYTES + 1);

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    File(PathBuf),
    Stdout,
}

impl Output {
    /// `-` is standard output (the Kubernetes convention); anything else a file path.
    pub fn parse(s: &str) -> Output {
        if s == "-" {
            Output::Stdout
        } else {
            Output::File(PathBuf::from(s))
        }
    }
}

/// When written lines are forced to the disk. Every line is written with one `write`
/// call on an unbuffered file, so a gateway crash never loses a returned record; `fsync`
/// is what survives a node crash or power loss, and costs a disk round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncPolicy {
    /// Leave it to the kernel's writeback (about 30 s on Linux).
    Never,
    /// `fsync` before `append` returns: nothing is lost, every decision waits for the disk.
    EveryRecord,
    /// `fsync` on the first append at least this long after the last one (and on rotation
    /// and drop): at most this much is lost on a node crash while traffic flows.
    Interval(Duration),
}

#[derive(Debug, Clone)]
pub struct AuditOptions {
    pub output: Output,
    /// Rotate before a write would take the file past this size; 0 never rotates.
    pub max_bytes: u64,
    /// Rotated files kept (`FILE.1` newest … `FILE.N` oldest); older ones are deleted.
    pub max_files: u32,
    pub sync: SyncPolicy,
}

impl AuditOptions {
    pub fn new(output: Output) -> Self {
        AuditOptions {
            output,
            max_bytes: 100 * 1024 * 1024,
            max_files: 5,
            sync: SyncPolicy::Interval(Duration::from_secs(1)),
        }
    }
}

/// Where the chain stands: the last record's sequence number and hash. Export it
/// somewhere the log's writer cannot rewrite, to anchor the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub seq: u64,
    pub hash: String,
}

/// `SEQ:HASH`, exactly what `audit verify --anchor` takes.
impl std::fmt::Display for Head {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.seq, self.hash)
    }
}

#[derive(Debug)]
pub enum AuditError {
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// A sealed record larger than [`MAX_LINE_BYTES`]: the field budgets make this a bug.
    LineTooLong(usize),
}

impl std::fmt::Display for AuditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuditError::Io { what, path, source } => {
                write!(f, "audit log {}: {what}: {source}", path.display())
            }
            AuditError::LineTooLong(n) => write!(f, "audit record of {n} bytes is too long"),
        }
    }
}

impl std::error::Error for AuditError {}

enum Sink {
    File { path: PathBuf, file: File },
    Stdout,
}

/// The hash-chained audit log. One writer per file; the gateway holds it behind a mutex
/// (records are ordered, so appends are serial anyway).
pub struct AuditLog {
    sink: Sink,
    opts: AuditOptions,
    key: ArgKey,
    next_seq: u64,
    prev: String,
    head: Option<Head>,
    size: u64,
    /// A write failed part-way: the tail must be looked at again before the next one.
    damaged: bool,
    last_sync: Instant,
    unsynced: bool,
    chain_breaks: u64,
}

impl AuditLog {
    /// Opens (or creates) the log and finds where its chain stands. A damaged tail gets
    /// a `chainBreak` record before anything else is written.
    pub fn open(opts: AuditOptions, key: ArgKey) -> Result<AuditLog, AuditError> {
        let sink = match &opts.output {
            Output::Stdout => Sink::Stdout,
            Output::File(path) => Sink::File {
                path: path.clone(),
                file: open_append(path)?,
            },
        };
        let mut log = AuditLog {
            sink,
            opts,
            key,
            next_seq: 0,
            prev: GENESIS.to_string(),
            head: None,
            size: 0,
            damaged: false,
            last_sync: Instant::now(),
            unsynced: false,
            chain_breaks: 0,
        };
        log.resume()?;
        Ok(log)
    }

    /// Records one decision; returns the new head. An error means the record is not in
    /// the log: the gateway must not let the request through (fail closed).
    pub fn append(&mut self, d: &DecisionRecord) -> Result<Head, AuditError> {
        if self.damaged {
            self.resume()?;
        }
        let fields = decision_fields(d, &self.key);
        self.write_record(fields)
    }

    /// The last record written (or found on open); `None` before the first.
    pub fn head(&self) -> Option<&Head> {
        self.head.as_ref()
    }

    /// `chainBreak` records this process wrote (a damaged tail found on open or after a
    /// failed write): worth a metric and a warning.
    pub fn chain_breaks(&self) -> u64 {
        self.chain_breaks
    }

    /// Forces written records to the disk (call on shutdown).
    pub fn sync(&mut self) -> Result<(), AuditError> {
        if let Sink::File { path, file } = &self.sink
            && self.unsynced
        {
            file.sync_data().map_err(io_err("fsync", path))?;
        }
        self.unsynced = false;
        self.last_sync = Instant::now();
        Ok(())
    }

    /// Finds where the chain stands from the tail of the current file, or of `FILE.1`
    /// when the current one is empty (a restart right after rotation).
    fn resume(&mut self) -> Result<(), AuditError> {
        let Sink::File { path, file } = &mut self.sink else {
            // Standard output cannot be read back: each process starts a chain.
            self.damaged = false;
            return Ok(());
        };
        let path = path.clone();
        self.size = file.metadata().map_err(io_err("stat", &path))?.len();
        let tail = if self.size > 0 {
            let mut t = read_tail(file, self.size).map_err(io_err("read tail", &path))?;
            if !t.ends_with_newline {
                // A torn last write: end it, so the next record starts on its own line.
                // If only the newline was lost, the record is whole again.
                file.write_all(b"\n").map_err(io_err("write", &path))?;
                self.size += 1;
                t = read_tail(file, self.size).map_err(io_err("read tail", &path))?;
            }
            Some(t)
        } else {
            let rotated = rotated_name(&path, 1);
            match File::open(&rotated) {
                Ok(mut f) => {
                    let len = f.metadata().map_err(io_err("stat", &rotated))?.len();
                    Some(read_tail(&mut f, len).map_err(io_err("read tail", &rotated))?)
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(io_err("open", &rotated)(e)),
            }
        };
        self.damaged = false;
        let Some(tail) = tail else {
            return Ok(());
        };
        if let Some(good) = &tail.last_good {
            self.next_seq = good.seq + 1;
            self.prev = good.hash.clone();
            self.head = Some(Head {
                seq: good.seq,
                hash: good.hash.clone(),
            });
        }
        if tail.clean {
            return Ok(());
        }
        let reason = match &tail.last_good {
            Some(_) => format!(
                "{} damaged line(s) after the last good record; chain continues from it",
                tail.damaged_lines
            ),
            None => "no good record in the last bytes of the log; a new chain starts".into(),
        };
        let last_good = tail.last_good.as_ref().map(|g| (g.seq, g.hash.as_str()));
        let fields = chain_break_fields(jiff::Timestamp::now(), &reason, last_good);
        self.write_record(fields)?;
        self.chain_breaks += 1;
        Ok(())
    }

    fn write_record(&mut self, fields: Map<String, Value>) -> Result<Head, AuditError> {
        let (line, hash) = seal(fields, self.next_seq, &self.prev);
        if line.len() > MAX_LINE_BYTES + 1 {
            return Err(AuditError::LineTooLong(line.len()));
        }
        let len = line.len() as u64;
        if self.opts.max_bytes > 0 && self.size > 0 && self.size + len > self.opts.max_bytes {
            self.rotate()?;
        }
        match &mut self.sink {
            Sink::File { path, file } => {
                if let Err(e) = file.write_all(&line) {
                    self.damaged = true;
                    return Err(io_err("write", path)(e));
                }
                self.unsynced = true;
            }
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(&line)
                    .and_then(|()| out.flush())
                    .map_err(io_err("write", Path::new("-")))?;
            }
        }
        self.size += len;
        self.next_seq += 1;
        self.prev = hash.clone();
        let head = Head {
            seq: self.next_seq - 1,
            hash,
        };
        self.head = Some(head.clone());
        match self.opts.sync {
            SyncPolicy::Never => {}
            SyncPolicy::EveryRecord => self.sync()?,
            SyncPolicy::Interval(d) => {
                if self.last_sync.elapsed() >= d {
                    self.sync()?;
                }
            }
        }
        Ok(head)
    }

    /// `FILE.(N-1)` → `FILE.N` … `FILE` → `FILE.1`, then a fresh `FILE`. The chain state
    /// is untouched, so the new file's first `prev` is the rotated file's last hash.
    fn rotate(&mut self) -> Result<(), AuditError> {
        self.sync()?;
        let Sink::File { path, file } = &mut self.sink else {
            return Ok(());
        };
        let keep = self.opts.max_files;
        if keep == 0 {
            ignore_missing(std::fs::remove_file(&*path)).map_err(io_err("remove", path))?;
        } else {
            for i in (1..keep).rev() {
                let from = rotated_name(path, i);
                ignore_missing(std::fs::rename(&from, rotated_name(path, i + 1)))
                    .map_err(io_err("rotate", &from))?;
            }
            ignore_missing(std::fs::rename(&*path, rotated_name(path, 1)))
                .map_err(io_err("rotate", path))?;
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            // Make the renames durable before records land in the new file.
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io_err("fsync directory", dir))?;
        }
        *file = open_append(path)?;
        self.size = 0;
        Ok(())
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        let _ = self.sync();
    }
}

fn open_append(path: &Path) -> Result<File, AuditError> {
    let mut o = OpenOptions::new();
    o.append(true).read(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o640);
    o.open(path).map_err(io_err("open", path))
}

pub(crate) fn rotated_name(path: &Path, i: u32) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{i}"));
    PathBuf::from(s)
}

fn ignore_missing(r: std::io::Result<()>) -> std::io::Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

fn io_err<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> AuditError + 'a {
    move |source| AuditError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// What the end of a file says about the chain.
#[derive(Debug)]
pub(crate) struct Tail {
    /// The last line that checks out on its own.
    pub last_good: Option<Checked>,
    /// Lines after it that do not (a line without its newline counts).
    pub damaged_lines: u64,
    pub ends_with_newline: bool,
    /// The file ends with a good, newline-terminated line.
    pub clean: bool,
}

/// Reads at most [`TAIL_WINDOW`] bytes from the end of a file of `len` bytes.
pub(crate) fn read_tail(file: &mut File, len: u64) -> std::io::Result<Tail> {
    let start = len.saturating_sub(TAIL_WINDOW as u64);
    file.seek(SeekFrom::Start(start))?;
    let mut buf = Vec::new();
    file.take(len - start).read_to_end(&mut buf)?;
    let mut body: &[u8] = &buf;
    if start > 0 {
        // The window opened mid-line: that line is not ours to judge.
        let cut = body
            .iter()
            .position(|&b| b == b'\n')
            .map_or(body.len(), |i| i + 1);
        body = &body[cut..];
    }
    let ends_with_newline = buf.last() == Some(&b'\n');
    let mut lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    if ends_with_newline || lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let mut damaged_lines = 0;
    let mut last_good = None;
    for (i, line) in lines.iter().enumerate().rev() {
        let torn = i == lines.len() - 1 && !ends_with_newline;
        match check_line(line) {
            Ok(c) if !torn => {
                last_good = Some(c);
                break;
            }
            _ => damaged_lines += 1,
        }
    }
    Ok(Tail {
        clean: last_good.is_some() && damaged_lines == 0,
        last_good,
        damaged_lines,
        ends_with_newline,
    })
}
