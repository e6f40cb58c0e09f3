//! Which files `-f` reads, and reading them safely. In CI the directory comes from a
//! pull request, so its author decides what is in it: a directory walk reads regular
//! files only and never follows a symbolic link (one named `x.yaml` could point at
//! `/proc/self/environ` or `/dev/zero`); a path named on the command line must be a
//! regular file once opened; files are opened non-blocking (a FIFO cannot hang the
//! gate), their type is checked on the open handle, and none is read past a size cap.

use super::InputError;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The default cap on one input file: ten times the largest generated estate (3.7 MB)
/// and still small enough that a hostile file cannot exhaust a CI runner's memory.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 32 * 1024 * 1024;

/// Limits on what one load reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadLimits {
    pub max_file_bytes: u64,
}

impl Default for ReadLimits {
    fn default() -> Self {
        ReadLimits {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
        }
    }
}

/// The path that names standard input on the command line (`-f -`).
pub const STDIN_ARG: &str = "-";
/// How standard input is named in messages and reports.
pub const STDIN_NAME: &str = "<stdin>";

/// Whether a command-line path means standard input.
pub fn is_stdin(p: &Path) -> bool {
    p.as_os_str() == STDIN_ARG
}

/// A directory entry a walk left out, and why (the CLI prints it as a note).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedFile {
    pub path: PathBuf,
    pub reason: &'static str,
}

/// A manifest file to read; `named` when the user named it (a symbolic link is
/// followed then, as the user chose it), not when a walk found it.
pub(super) struct Source {
    pub path: PathBuf,
    pub named: bool,
}

/// A size as `--max-file-size` takes it: bytes, or a number with `Ki`, `Mi` or `Gi`
/// (powers of 1,024, as Kubernetes quantities write them; a trailing `B` is allowed).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t.strip_suffix('B').unwrap_or(t);
    let (digits, unit) = match t.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let shift = match unit {
        "" => 0,
        "Ki" => 10,
        "Mi" => 20,
        "Gi" => 30,
        _ => return Err(format!("{s:?}: use bytes, or a number with Ki, Mi or Gi")),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{s:?}: use bytes, or a number with Ki, Mi or Gi"))?;
    match n.checked_mul(1 << shift) {
        Some(0) => Err("the cap must be at least 1 byte".into()),
        Some(v) => Ok(v),
        None => Err(format!("{s:?} is too large")),
    }
}

/// `1024 bytes`, `33554432 bytes (32 MiB)`: the exact figure a user can compare.
pub fn describe_size(n: u64) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{n} bytes ({} MiB)", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{n} bytes ({} KiB)", n >> 10),
        n => format!("{n} bytes"),
    }
}

fn is_manifest_name(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

fn error(path: &Path, message: String) -> InputError {
    InputError {
        file: path.to_path_buf(),
        object: None,
        message,
    }
}

/// The files under `path`: itself when it is not a directory, else every regular
/// `*.yaml`, `*.yml` and `*.json` below it, sorted. What a walk declines goes to
/// `skipped`.
pub(super) fn sources(
    path: &Path,
    skipped: &mut Vec<SkippedFile>,
) -> Result<Vec<Source>, InputError> {
    // Named paths follow links: the user chose them. Type and size are checked on the
    // opened handle in `read`.
    let meta = std::fs::metadata(path).map_err(|e| error(path, format!("cannot read: {e}")))?;
    if !meta.is_dir() {
        return Ok(vec![Source {
            path: path.to_path_buf(),
            named: true,
        }]);
    }
    let mut out = Vec::new();
    let mut found = Vec::new();
    // A work list rather than recursion: depth is the input's to choose.
    let mut dirs = vec![path.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries =
            std::fs::read_dir(&dir).map_err(|e| error(&dir, format!("cannot list: {e}")))?;
        for entry in entries {
            let entry = entry.map_err(|e| error(&dir, format!("cannot list: {e}")))?;
            let p = entry.path();
            // The entry's own type: a symbolic link is reported as one, not followed.
            let ty = entry
                .file_type()
                .map_err(|e| error(&p, format!("cannot read: {e}")))?;
            if ty.is_dir() {
                dirs.push(p);
            } else if ty.is_file() {
                if is_manifest_name(&p) {
                    out.push(p);
                }
            } else if ty.is_symlink() {
                if is_manifest_name(&p) {
                    found.push(SkippedFile {
                        path: p,
                        reason: "a symbolic link (directory walks never follow links)",
                    });
                } else if std::fs::metadata(&p).is_ok_and(|m| m.is_dir()) {
                    // Its manifests would have been read before links were refused.
                    found.push(SkippedFile {
                        path: p,
                        reason: "a symbolic link to a directory (directory walks never follow links)",
                    });
                }
            } else if is_manifest_name(&p) {
                found.push(SkippedFile {
                    path: p,
                    reason: "not a regular file (a FIFO, socket or device)",
                });
            }
        }
    }
    out.sort();
    found.sort_by(|a, b| a.path.cmp(&b.path));
    skipped.extend(found);
    Ok(out
        .into_iter()
        .map(|path| Source { path, named: false })
        .collect())
}

fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let ty = meta.file_type();
    if ty.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ty.is_fifo() {
            return "a FIFO";
        }
        if ty.is_socket() {
            return "a socket";
        }
        if ty.is_char_device() || ty.is_block_device() {
            return "a device";
        }
    }
    "not a regular file"
}

#[cfg(unix)]
fn open(src: &Source) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    // Non-blocking: opening a FIFO for reading waits for a writer otherwise. No
    // controlling terminal from a tty. A walk's file must not have become a link since.
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if !src.named {
        flags |= libc::O_NOFOLLOW;
    }
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(&src.path)
}

#[cfg(not(unix))]
fn open(src: &Source) -> std::io::Result<File> {
    File::open(&src.path)
}

/// The bytes of one regular file, at most `limits.max_file_bytes` of them.
pub(super) fn read(src: &Source, limits: ReadLimits) -> Result<Vec<u8>, InputError> {
    let path = src.path.as_path();
    let file = open(src).map_err(|e| error(path, format!("cannot read: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| error(path, format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(error(
            path,
            format!(
                "not a regular file ({}); only regular files are read",
                kind_of(&meta)
            ),
        ));
    }
    // The size a stat reports is a hint only: /proc files report 0 and a file can grow
    // while read. The cap holds on the bytes actually read.
    read_capped(file, path, meta.len(), limits)
}

fn too_large(path: &Path, cap: u64) -> InputError {
    error(
        path,
        format!(
            "larger than the cap of {} on one input file (raise it with --max-file-size or MCPGOV_MAX_FILE_SIZE)",
            describe_size(cap)
        ),
    )
}

/// At most `limits.max_file_bytes` bytes of `r` (`hint`: the size a stat reported, if
/// any); one byte more is an error naming `path`.
fn read_capped(
    r: impl Read,
    path: &Path,
    hint: u64,
    limits: ReadLimits,
) -> Result<Vec<u8>, InputError> {
    let cap = limits.max_file_bytes;
    if hint > cap {
        return Err(too_large(path, cap));
    }
    let mut bytes = Vec::with_capacity(hint.min(cap) as usize);
    r.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| error(path, format!("cannot read: {e}")))?;
    if bytes.len() as u64 > cap {
        return Err(too_large(path, cap));
    }
    Ok(bytes)
}

/// Standard input (`-f -`), under the same cap as any file and named `<stdin>`: what a
/// pipe carries is as untrusted as a pull request's file.
pub(super) fn read_stdin(limits: ReadLimits) -> Result<Vec<u8>, InputError> {
    read_from(std::io::stdin().lock(), limits)
}

/// `read_stdin` over any reader (tests).
pub(super) fn read_from(r: impl Read, limits: ReadLimits) -> Result<Vec<u8>, InputError> {
    read_capped(r, Path::new(STDIN_NAME), 0, limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_bytes_or_binary_units() {
        assert_eq!(parse_size("1024"), Ok(1024));
        assert_eq!(parse_size("1Ki"), Ok(1024));
        assert_eq!(parse_size("32Mi"), Ok(DEFAULT_MAX_FILE_BYTES));
        assert_eq!(parse_size("32MiB"), Ok(DEFAULT_MAX_FILE_BYTES));
        assert_eq!(parse_size("1Gi"), Ok(1 << 30));
        for bad in [
            "",
            "0",
            "1.5Mi",
            "32M",
            "-1",
            "Mi",
            "99999999999999999999Gi",
            "１",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert_eq!(describe_size(16), "16 bytes");
        assert_eq!(describe_size(1024), "1024 bytes (1 KiB)");
        assert_eq!(
            describe_size(DEFAULT_MAX_FILE_BYTES),
            "33554432 bytes (32 MiB)"
        );
    }

    #[test]
    fn stdin_is_read_under_the_same_cap_and_named_stdin() {
        let limits = ReadLimits { max_file_bytes: 8 };
        assert_eq!(read_from(&b"12345678"[..], limits).unwrap(), b"12345678");
        let e = read_from(&b"123456789"[..], limits).unwrap_err();
        assert_eq!(e.file, Path::new("<stdin>"));
        assert!(
            e.message.contains("larger than the cap of 8 bytes"),
            "{}",
            e.message
        );
        assert!(is_stdin(Path::new("-")));
        assert!(!is_stdin(Path::new("./-")));
        assert!(!is_stdin(Path::new("-.yaml")));
    }
}
