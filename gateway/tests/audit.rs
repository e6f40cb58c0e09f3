//! The audit log on real files: chains across restarts and rotation, every kind of
//! tampering named at its line, recovery from a torn tail, failures surfaced, and the
//! documented recipe recomputing every hash with Python.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use mcpgov_gateway::audit::{
    Anchor, ArgKey, AuditLog, AuditOptions, Decision, DecisionRecord, GENESIS, Output, SyncPolicy,
    VerifyOptions, verify, verify_main, verify_with,
};
use serde_json::{Value, json};

fn key(b: u8) -> ArgKey {
    ArgKey::from_bytes(&[b; 32]).unwrap()
}

fn decision(i: u64) -> DecisionRecord {
    DecisionRecord {
        time: jiff::Timestamp::from_second(1_796_000_000 + i as i64).unwrap(),
        agent: "team-a/researcher".into(),
        bundle_sha: Some("sha256:0123".into()),
        server: "team-a/files".into(),
        method: "tools/call".into(),
        tool: Some(format!("fs__read_{i}")),
        decision: if i.is_multiple_of(2) {
            Decision::Allow
        } else {
            Decision::Deny
        },
        enforced: true,
        reasons: vec![format!("reason {i}")],
        bundle_contract_digest: Some("sha256:aa".into()),
        live_contract_digest: Some("sha256:aa".into()),
        arg_names: vec!["path".into()],
        arguments: Some(json!({"path": format!("/home/alice/secret-{i}.txt")})),
        session_id: Some("sess-1".into()),
        resources: Vec::new(),
    }
}

fn opts(path: &Path) -> AuditOptions {
    AuditOptions {
        output: Output::File(path.to_path_buf()),
        max_bytes: 0,
        max_files: 3,
        sync: SyncPolicy::EveryRecord,
    }
}

fn write_log(path: &Path, n: u64) {
    let mut log = AuditLog::open(opts(path), key(1)).unwrap();
    for i in 0..n {
        log.append(&decision(i)).unwrap();
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn parse(line: &str) -> Value {
    serde_json::from_str(line).unwrap()
}

/// The break a tampered copy gives, as (line, message).
fn broken_at(path: &Path) -> (u64, String) {
    let b = verify(&[path]).expect_err("tampering must be detected");
    (b.line, b.what)
}

#[test]
fn the_chain_continues_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    write_log(&path, 3);
    let mut log = AuditLog::open(opts(&path), key(1)).unwrap();
    let head = log.head().cloned().unwrap();
    assert_eq!(head.seq, 2);
    assert_eq!(log.chain_breaks(), 0);
    assert_eq!(head.hash, parse(&lines(&path)[2])["hash"]);
    let next = log.append(&decision(3)).unwrap();
    assert_eq!(next.seq, 3);
    drop(log);

    let l = lines(&path);
    assert_eq!(l.len(), 4);
    assert_eq!(parse(&l[0])["prev"], GENESIS);
    assert_eq!(parse(&l[3])["prev"], parse(&l[2])["hash"]);
    let s = verify(&[&path]).unwrap();
    assert_eq!((s.records, s.first_seq, s.last_seq), (4, Some(0), Some(3)));
    assert_eq!(s.head.as_deref(), Some(next.hash.as_str()));
    assert!(s.starts_at_genesis && s.recorded_breaks.is_empty());
}

#[test]
fn the_chain_continues_across_rotation_and_old_files_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    // Size the files to hold four records each (lines differ by a few bytes).
    let probe = dir.path().join("probe");
    write_log(&probe, 1);
    let l0 = std::fs::metadata(&probe).unwrap().len();
    assert!(5 * (l0 - 1) > 4 * l0 + 16);
    let mut o = opts(&path);
    o.max_bytes = 4 * l0 + 16;
    o.max_files = 2;
    let mut log = AuditLog::open(o.clone(), key(1)).unwrap();
    for i in 0..13 {
        log.append(&decision(i)).unwrap();
    }
    drop(log);
    let rotated = |i: u32| PathBuf::from(format!("{}.{i}", path.display()));
    let seqs = |p: &Path| -> Vec<u64> {
        lines(p)
            .iter()
            .map(|l| parse(l)["seq"].as_u64().unwrap())
            .collect()
    };
    // 0..=3 went to FILE.3 and was dropped (two rotated files are kept).
    assert!(!rotated(3).exists());
    assert_eq!(seqs(&rotated(2)), [4, 5, 6, 7]);
    assert_eq!(seqs(&rotated(1)), [8, 9, 10, 11]);
    assert_eq!(seqs(&path), [12]);
    // The new file's first record links to the rotated file's last.
    let last_rotated = lines(&rotated(1)).pop().unwrap();
    assert_eq!(
        parse(&lines(&path)[0])["prev"],
        parse(&last_rotated)["hash"]
    );

    let all = [rotated(2), rotated(1), path.clone()];
    let s = verify(&all).unwrap();
    assert_eq!((s.files, s.records), (3, 9));
    assert_eq!((s.first_seq, s.last_seq), (Some(4), Some(12)));
    assert!(!s.starts_at_genesis);
    let from_genesis = VerifyOptions {
        from_genesis: true,
        ..Default::default()
    };
    let b = verify_with(&all, &from_genesis).unwrap_err();
    assert_eq!((b.file, b.line), (rotated(2), 1));
    // Files out of order: a break at the first line of the misplaced one.
    let b = verify(&[rotated(1), rotated(2), path.clone()]).unwrap_err();
    assert_eq!((b.file, b.line), (rotated(2), 1));
    // A missing middle file: a break where the chain resumes.
    let b = verify(&[rotated(2), path.clone()]).unwrap_err();
    assert_eq!((b.file, b.line), (path.clone(), 1));

    // A restart just after a rotation (no current file yet) continues from FILE.1.
    std::fs::rename(rotated(2), rotated(3)).unwrap();
    std::fs::rename(rotated(1), rotated(2)).unwrap();
    std::fs::rename(&path, rotated(1)).unwrap();
    let mut log = AuditLog::open(o, key(1)).unwrap();
    assert_eq!(log.head().unwrap().seq, 12);
    log.append(&decision(13)).unwrap();
    drop(log);
    assert_eq!(seqs(&path), [13]);
    let s = verify(&[rotated(3), rotated(2), rotated(1), path.clone()]).unwrap();
    assert_eq!((s.records, s.last_seq), (10, Some(13)));
}

/// A line edited by someone who also recomputes its own hash.
fn reseal(line: &str, edit: impl FnOnce(&mut Value)) -> String {
    use mcpgov_core::canonical::{sha256_hex, to_canonical_json};
    let mut v = parse(line);
    edit(&mut v);
    v.as_object_mut().unwrap().remove("hash");
    v["hash"] = json!(sha256_hex(&to_canonical_json(&v)));
    String::from_utf8(to_canonical_json(&v)).unwrap()
}

/// Writes a 6-record log and a tampered copy made by `edit` on its lines.
fn tampered(dir: &Path, name: &str, edit: impl FnOnce(&mut Vec<String>)) -> PathBuf {
    let good = dir.join(format!("{name}.good"));
    write_log(&good, 6);
    let mut l = lines(&good);
    edit(&mut l);
    let bad = dir.join(name);
    std::fs::write(&bad, l.iter().map(|s| format!("{s}\n")).collect::<String>()).unwrap();
    bad
}

#[test]
fn every_kind_of_tampering_is_named_at_its_line() {
    let d = tempfile::tempdir().unwrap();
    let d = d.path();

    let p = tampered(d, "edited", |l| {
        l[2] = l[2].replace("\"allow\"", "\"deny\"")
    });
    let p2 = tampered(d, "edited2", |l| {
        l[3] = l[3].replace("reason 3", "reason 9")
    });
    assert_eq!(broken_at(&p).0, 3);
    let (line, what) = broken_at(&p2);
    assert_eq!(line, 4);
    assert!(what.contains("hash mismatch"), "{what}");

    // An editor who also recomputes the line's own hash is caught by the next line.
    let p = tampered(d, "resealed", |l| {
        l[2] = reseal(&l[2], |v| v["decision"] = json!("deny"));
    });
    let (line, what) = broken_at(&p);
    assert_eq!(line, 4);
    assert!(what.contains("prev"), "{what}");

    let p = tampered(d, "deleted", |l| {
        l.remove(2);
    });
    let (line, what) = broken_at(&p);
    assert_eq!(line, 3);
    assert!(what.contains("seq 3 follows seq 1"), "{what}");

    let p = tampered(d, "swapped", |l| l.swap(2, 3));
    assert_eq!(broken_at(&p).0, 3);

    let p = tampered(d, "inserted", |l| {
        let dup = l[1].clone();
        l.insert(2, dup);
    });
    assert_eq!(broken_at(&p).0, 3);

    let p = tampered(d, "garbage", |l| l.insert(4, "{\"not\":\"ours\"}".into()));
    assert_eq!(broken_at(&p).0, 5);

    let p = tampered(d, "reformatted", |l| l[1] = l[1].replacen(':', ": ", 1));
    let (line, what) = broken_at(&p);
    assert_eq!(line, 2);
    assert!(what.contains("canonical"), "{what}");

    // Truncation mid-line, and of the final newline alone.
    for (name, cut) in [("cut-mid", 40), ("cut-newline", 1)] {
        let p = tampered(d, name, |_| {});
        let len = std::fs::metadata(&p).unwrap().len();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len - cut)
            .unwrap();
        let (line, what) = broken_at(&p);
        assert_eq!(line, 6, "{name}");
        assert!(what.contains("truncated"), "{name}: {what}");
    }
}

#[test]
fn removed_trailing_records_need_an_anchor_and_it_catches_them() {
    let d = tempfile::tempdir().unwrap();
    let p = tampered(d.path(), "short", |l| l.truncate(4));
    let good = d.path().join("short.good");
    let head_seq = 5;
    let head_hash = parse(&lines(&good)[5])["hash"]
        .as_str()
        .unwrap()
        .to_string();

    // Without an anchor, a log cut at a line boundary is a shorter good log.
    assert_eq!(verify(&[&p]).unwrap().last_seq, Some(3));
    let anchored = VerifyOptions {
        anchors: vec![Anchor {
            seq: head_seq,
            hash: Some(head_hash.clone()),
        }],
        ..Default::default()
    };
    let b = verify_with(&[&p], &anchored).unwrap_err();
    assert_eq!(b.line, 5);
    assert!(
        b.what.contains("trailing records were removed"),
        "{}",
        b.what
    );
    assert!(verify_with(&[&good], &anchored).is_ok());

    // A chain rewritten from scratch under another key passes alone, not against the anchor.
    let forged = d.path().join("forged");
    let mut log = AuditLog::open(opts(&forged), key(9)).unwrap();
    for i in 0..6 {
        let mut r = decision(i);
        r.decision = Decision::Allow;
        log.append(&r).unwrap();
    }
    drop(log);
    assert!(verify(&[&forged]).is_ok());
    let b = verify_with(&[&forged], &anchored).unwrap_err();
    assert_eq!(b.line, 6);
    assert!(b.what.contains("rewritten"), "{}", b.what);
}

#[test]
fn a_huge_line_is_a_break_not_an_allocation() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("huge");
    write_log(&p, 2);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.extend(std::iter::repeat_n(b'x', 8 * 1024 * 1024));
    std::fs::write(&p, bytes).unwrap();
    let (line, what) = broken_at(&p);
    assert_eq!(line, 3);
    assert!(what.contains("longer than"), "{what}");
    // The writer reopening it looks only at a bounded tail and records the damage.
    let mut log = AuditLog::open(opts(&p), key(1)).unwrap();
    log.append(&decision(2)).unwrap();
    drop(log);
    let last = parse(&lines(&p).pop().unwrap());
    assert_eq!(last["seq"], 1);
    let brk = parse(&lines(&p)[lines(&p).len() - 2]);
    assert_eq!(brk["kind"], "chainBreak");
    assert!(brk.get("lastGoodHash").is_none(), "{brk}");
    assert_eq!(brk["seq"], 0);
    assert_eq!(brk["prev"], GENESIS);
}

#[test]
fn a_torn_tail_is_recorded_on_reopen_and_the_chain_goes_on() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("torn");
    write_log(&p, 4);
    let last_good = parse(&lines(&p)[2]);
    let len = std::fs::metadata(&p).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(len - 30)
        .unwrap();
    assert_eq!(broken_at(&p).0, 4);

    let mut log = AuditLog::open(opts(&p), key(1)).unwrap();
    assert_eq!(
        log.head().unwrap().seq,
        3,
        "the chainBreak record is the head"
    );
    log.append(&decision(4)).unwrap();
    drop(log);
    let l = lines(&p);
    let brk = parse(&l[4]);
    assert_eq!(brk["kind"], "chainBreak");
    assert_eq!(brk["lastGoodHash"], last_good["hash"]);
    assert_eq!(brk["lastGoodSeq"], 2);
    assert_eq!(
        (brk["seq"].clone(), brk["prev"].clone()),
        (json!(3), last_good["hash"].clone())
    );

    let s = verify(&[&p]).unwrap();
    assert_eq!(s.last_seq, Some(4));
    assert_eq!(s.recorded_breaks.len(), 1);
    assert_eq!(s.recorded_breaks[0].line, 5);
    assert_eq!(s.recorded_breaks[0].damaged_lines, 1);
    assert_eq!(s.recorded_breaks[0].first_damaged.as_ref().unwrap().1, 4);
    let strict = VerifyOptions {
        strict: true,
        ..Default::default()
    };
    assert_eq!(verify_with(&[&p], &strict).unwrap_err().line, 5);

    // A chainBreak that does not name the last good record is no cover for the damage,
    // even re-sealed: the break stays at the damaged line.
    let good_copy = lines(&p);
    for (name, edit) in [
        ("lastGoodHash", json!("sha256:forged")),
        ("seq", json!(4)),
        ("prev", json!(GENESIS)),
    ] {
        let mut l = good_copy.clone();
        l[4] = reseal(&l[4], |v| v[name] = edit.clone());
        std::fs::write(&p, l.iter().map(|s| format!("{s}\n")).collect::<String>()).unwrap();
        assert_eq!(broken_at(&p).0, 4, "{name}");
    }
}

#[test]
fn a_lost_final_newline_alone_is_repaired_without_a_break() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("nl");
    write_log(&p, 3);
    let len = std::fs::metadata(&p).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let mut log = AuditLog::open(opts(&p), key(1)).unwrap();
    assert_eq!(log.head().unwrap().seq, 2);
    log.append(&decision(3)).unwrap();
    drop(log);
    let s = verify(&[&p]).unwrap();
    assert_eq!((s.records, s.recorded_breaks.len()), (4, 0));
}

#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_is_an_error_the_gateway_can_fail_closed_on() {
    // /dev/full accepts the open and fails every write with ENOSPC.
    let mut log = AuditLog::open(opts(Path::new("/dev/full")), key(1)).unwrap();
    let e = log.append(&decision(0)).unwrap_err();
    assert!(e.to_string().contains("write"), "{e}");
    assert!(log.head().is_none());
    assert!(log.append(&decision(0)).is_err());
}

#[test]
fn a_missing_directory_is_an_error_at_open() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("no/such/dir/audit.log");
    assert!(AuditLog::open(opts(&p), key(1)).is_err());
}

#[test]
fn arguments_are_digested_under_the_key_and_never_written() {
    let d = tempfile::tempdir().unwrap();
    let (a, b) = (d.path().join("a"), d.path().join("b"));
    for (p, k) in [(&a, 1), (&b, 2)] {
        let mut log = AuditLog::open(opts(p), key(k)).unwrap();
        let mut r = decision(0);
        r.arguments =
            Some(json!({"token": "ghp_SECRETVALUE", "n": 424242, "nested": {"x": "PLAINTEXT"}}));
        r.arg_names = vec!["token".into(), "n".into(), "nested".into()];
        log.append(&r).unwrap();
    }
    let (ta, tb) = (
        std::fs::read_to_string(&a).unwrap(),
        std::fs::read_to_string(&b).unwrap(),
    );
    for t in [&ta, &tb] {
        for secret in ["SECRETVALUE", "424242", "PLAINTEXT"] {
            assert!(!t.contains(secret), "{secret} leaked: {t}");
        }
    }
    let (ra, rb) = (parse(ta.trim()), parse(tb.trim()));
    assert_eq!(ra["argNames"], json!(["token", "n", "nested"]));
    assert!(
        ra["argDigest"]
            .as_str()
            .unwrap()
            .starts_with("hmac-sha256:")
    );
    assert_ne!(ra["argDigest"], rb["argDigest"]);
    assert_ne!(ra["argKeyId"], rb["argKeyId"]);
    // Same key, same arguments in another key order: same digest.
    assert_eq!(
        key(1).digest(&json!({"b": 1, "a": 2})),
        key(1).digest(&serde_json::from_str::<Value>(r#"{"a":2,"b":1}"#).unwrap())
    );
}

/// The recipe in docs/gateway-audit.md, run as written.
#[test]
fn the_documented_python_recipe_recomputes_every_hash() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.log");
    write_log(&p, 5);
    let recipe = r#"
import hashlib, json, sys
GENESIS = "sha256:" + "0" * 64
prev, seq = GENESIS, 0
for n, line in enumerate(open(sys.argv[1], "rb"), 1):
    rec = json.loads(line)
    claimed = rec.pop("hash")
    canon = json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert "sha256:" + hashlib.sha256(canon).hexdigest() == claimed, f"line {n}: hash"
    assert rec["prev"] == prev and rec["seq"] == seq, f"line {n}: link"
    prev, seq = claimed, seq + 1
print(seq, prev)
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(recipe)
        .arg(&p)
        .output()
        .expect("python3 runs (the conformance suite needs it too)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let head = verify(&[&p]).unwrap().head.unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        format!("5 {head}")
    );
}

#[test]
fn verify_main_exit_codes() {
    let d = tempfile::tempdir().unwrap();
    let good = d.path().join("good");
    write_log(&good, 3);
    let bad = tampered(d.path(), "bad", |l| l.swap(0, 1));
    let g = good.to_str().unwrap();
    assert_eq!(verify_main([g]), ExitCode::SUCCESS);
    assert_eq!(verify_main([bad.to_str().unwrap()]), ExitCode::from(1));
    assert_eq!(verify_main(["--anchor", "9", g]), ExitCode::from(1));
    assert_eq!(verify_main(["--anchor", "2", g]), ExitCode::SUCCESS);
    let head = AuditLog::open(opts(&good), key(1))
        .unwrap()
        .head()
        .unwrap()
        .to_string();
    assert!(head.starts_with("2:sha256:"), "{head}");
    assert_eq!(verify_main(["--anchor", &head, g]), ExitCode::SUCCESS);
    let wrong = format!("2:sha256:{}", "f".repeat(64));
    assert_eq!(verify_main(["--anchor", &wrong, g]), ExitCode::from(1));
    assert_eq!(verify_main(["--anchor", "x", g]), ExitCode::from(2));
    assert_eq!(verify_main(["--bogus", g]), ExitCode::from(2));
    assert_eq!(verify_main(Vec::<String>::new()), ExitCode::from(2));
    assert_eq!(verify_main(["missing-file"]), ExitCode::from(1));
}

/// Standard output (`-`): runs this test binary again as the writer and verifies what
/// it printed. Each process starts a chain at genesis (stdout cannot be read back).
#[test]
fn stdout_output_is_a_verifiable_chain() {
    const CHILD: &str = "MCPGOV_AUDIT_STDOUT_CHILD";
    if std::env::var_os(CHILD).is_some() {
        let mut log = AuditLog::open(AuditOptions::new(Output::parse("-")), key(1)).unwrap();
        for i in 0..3 {
            log.append(&decision(i)).unwrap();
        }
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "stdout_output_is_a_verifiable_chain",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    // The test harness prints its own lines around ours.
    let records: String = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| format!("{l}\n"))
        .collect();
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("stdout.log");
    std::fs::write(&p, records).unwrap();
    let s = verify(&[&p]).unwrap();
    assert_eq!(
        (s.records, s.first_seq, s.starts_at_genesis),
        (3, Some(0), true)
    );
}

#[test]
fn a_torn_rotated_file_is_recorded_in_the_new_one() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.log");
    let rotated = PathBuf::from(format!("{}.1", p.display()));
    write_log(&p, 4);
    let last_good = parse(&lines(&p)[2])["hash"].clone();
    let len = std::fs::metadata(&p).unwrap().len();
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(len - 10)
        .unwrap();
    std::fs::rename(&p, &rotated).unwrap();

    let mut log = AuditLog::open(opts(&p), key(1)).unwrap();
    log.append(&decision(4)).unwrap();
    drop(log);
    let brk = parse(&lines(&p)[0]);
    assert_eq!(
        (brk["kind"].clone(), brk["prev"].clone()),
        (json!("chainBreak"), last_good)
    );
    // The rotated file is left as it was: the verifier sees the torn line and the record.
    let s = verify(&[&rotated, &p]).unwrap();
    assert_eq!(s.last_seq, Some(4));
    let b = &s.recorded_breaks[0];
    assert_eq!((b.file.clone(), b.line), (p.clone(), 1));
    assert_eq!(b.first_damaged, Some((rotated.clone(), 4)));
    // Without the chainBreak (the new file not given) the torn line is a break.
    assert_eq!(verify(&[&rotated]).unwrap_err().line, 4);
}

#[test]
fn damage_larger_than_the_tail_window_is_not_looked_past() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.log");
    write_log(&p, 3);
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.extend("garbage\n".repeat(20_000).as_bytes());
    std::fs::write(&p, bytes).unwrap();
    let mut log = AuditLog::open(opts(&p), key(1)).unwrap();
    assert_eq!(log.chain_breaks(), 1);
    log.append(&decision(0)).unwrap();
    drop(log);
    // The writer found no good record within reach, so it started a new chain...
    let l = lines(&p);
    let brk = parse(&l[l.len() - 2]);
    assert_eq!(
        (brk["seq"].clone(), brk["prev"].clone()),
        (json!(0), json!(GENESIS))
    );
    assert!(brk.get("lastGoodHash").is_none());
    // ...and the verifier names the first damaged line.
    let (line, what) = broken_at(&p);
    assert_eq!(line, 4);
    assert!(what.contains("not a JSON record"), "{what}");
}

#[test]
fn a_chain_break_does_not_cover_more_damage_than_the_writer_could_see() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("audit.log");
    write_log(&p, 3);
    let mut f = std::fs::File::options().append(true).open(&p).unwrap();
    std::io::Write::write_all(&mut f, b"{\"torn").unwrap();
    drop(f);
    drop(AuditLog::open(opts(&p), key(1)).unwrap());
    let s = verify(&[&p]).unwrap();
    assert_eq!(s.recorded_breaks[0].damaged_lines, 1);
    // Widen the damage past the writer's tail window: no longer something a restart
    // could have recorded, so it is a break.
    let mut l = lines(&p);
    let garbage = vec!["garbage".to_string(); 20_000];
    l.splice(4..4, garbage);
    std::fs::write(&p, l.iter().map(|s| format!("{s}\n")).collect::<String>()).unwrap();
    assert_eq!(broken_at(&p).0, 4);
}
