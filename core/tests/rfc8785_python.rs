//! Our canonical JSON against an independent implementation: the `rfc8785` package from
//! PyPI (installed once into a cached venv by `rfc8785-python/install.sh`, hash-pinned)
//! canonicalises a corpus — the RFC's examples, thousands of random doubles in every
//! spelling, random documents with non-BMP, surrogate-adjacent and control-character
//! names and strings, repeated names, inputs with no canonical form — and both of our
//! canonicalisers must give the same bytes, or refuse the same inputs.
//!
//! Set MCPGOV_RFC8785_PYTHON to a python with `rfc8785` to skip the install.

use mcpgov_core::canonical::to_canonical_json;
use mcpgov_core::streaming::{Unbounded, canonical};
use rand::Rng;
use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> String {
    if let Some(p) = std::env::var_os("MCPGOV_RFC8785_PYTHON") {
        return p.to_string_lossy().into_owned();
    }
    let script = here().join("rfc8785-python/install.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{} failed (it needs python3 with venv and access to PyPI):\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

fn ours(text: &str) -> Result<String, String> {
    let by_value = serde_json::from_str::<serde_json::Value>(text)
        .map(|v| hex(&to_canonical_json(&v)))
        .map_err(|e| e.to_string());
    let mut out = Vec::new();
    let streamed = canonical(text, 1, &Unbounded, &mut out).map(|()| hex(&out));
    assert_eq!(
        by_value.is_ok(),
        streamed.is_ok(),
        "{text}: {by_value:?} {streamed:?}"
    );
    if let (Ok(a), Ok(b)) = (&by_value, &streamed) {
        assert_eq!(a, b, "the two canonicalisers disagree on {text}");
    }
    by_value
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A random double in one of the spellings a server might use.
fn number(rng: &mut impl Rng) -> String {
    let f = loop {
        let f = f64::from_bits(rng.random::<u64>());
        if f.is_finite() {
            break f;
        }
    };
    match rng.random_range(0..8) {
        0 => format!("{f:e}"),
        1 => format!("{f:?}"),
        2 => format!(
            "{:.3}",
            rng.random::<f64>() * 10f64.powi(rng.random_range(-8..22))
        ),
        3 => rng.random::<i64>().to_string(),
        4 => format!("{}", rng.random::<u64>() as u128 * 1000),
        // Within a double's range (below 1e306), down into the subnormals and to 0.
        5 => format!(
            "{}{}.{}E{}",
            if rng.random() { "-" } else { "" },
            rng.random_range(0..1_000_000u32),
            rng.random_range(0..1_000_000u32),
            if rng.random() {
                format!("+{}", rng.random_range(0..300))
            } else {
                format!("-{}", rng.random_range(0..340))
            }
        ),
        6 => format!("{}", rng.random_range(-100_000i32..100_000)),
        _ => [
            "0", "-0", "0.0", "-0.0", "1.0", "1e21", "1e-7", "100", "4.50", "2e-3",
        ][rng.random_range(0..10)]
        .to_string(),
    }
}

fn text(rng: &mut impl Rng) -> String {
    let alphabet = [
        "a",
        "b",
        "Z",
        "1",
        "\"",
        "\\",
        "/",
        "\n",
        "\r",
        "\t",
        "\u{8}",
        "\u{c}",
        "\u{1}",
        "\u{1f}",
        "\u{7f}",
        "\u{80}",
        "é",
        "ö",
        "€",
        "\u{2028}",
        "\u{d7ff}",
        "\u{e000}",
        "\u{fb33}",
        "\u{fffd}",
        "\u{ffff}",
        "😀",
        "\u{10000}",
        "\u{10ffff}",
    ];
    let s: String = (0..rng.random_range(0..6))
        .map(|_| alphabet[rng.random_range(0..alphabet.len())])
        .collect();
    // Sometimes with every character escaped as \uXXXX, as some servers write.
    let json = serde_json::to_string(&s).unwrap();
    if rng.random_range(0..4) == 0 {
        let escaped: String = s.encode_utf16().map(|u| format!("\\u{u:04X}")).collect();
        format!("\"{escaped}\"")
    } else {
        json
    }
}

fn value(rng: &mut impl Rng, depth: u32) -> String {
    match rng.random_range(0..if depth > 3 { 5 } else { 7 }) {
        0 => ["null", "true", "false"][rng.random_range(0..3)].to_string(),
        1 | 2 => number(rng),
        3 | 4 => text(rng),
        5 => {
            let items: Vec<String> = (0..rng.random_range(0..5))
                .map(|_| value(rng, depth + 1))
                .collect();
            format!("[{}]", items.join(" , "))
        }
        _ => {
            let members: Vec<String> = (0..rng.random_range(0..7))
                .map(|_| format!("{} : {}", text(rng), value(rng, depth + 1)))
                .collect();
            format!("{{ {} }}", members.join(", "))
        }
    }
}

fn corpus() -> Vec<String> {
    let fixtures = here().join("fixtures/rfc8785");
    let one_line = |name: &str| {
        std::fs::read_to_string(fixtures.join(name))
            .unwrap()
            .replace('\n', " ")
    };
    let mut lines = vec![
        one_line("structures.input.json"),
        one_line("sorting.input.json"),
        // No canonical form: a number beyond a double, lone surrogates.
        "1e400".into(),
        "[-1e999]".into(),
        r#""\ud800""#.into(),
        r#"{"\udc00": 1}"#.into(),
        // Repeated names: the last one counts, as in Python's json.
        r#"{"a": 1, "b": 2, "a": 3}"#.into(),
    ];
    let table = std::fs::read_to_string(fixtures.join("numbers.csv")).unwrap();
    for row in table.lines().filter(|l| !l.starts_with('#')) {
        let (bits, _) = row.split_once(',').unwrap();
        let f = f64::from_bits(u64::from_str_radix(bits, 16).unwrap());
        if f.is_finite() {
            lines.push(format!("[{f:e}, {f:?}]"));
        }
    }
    let mut rng = rand::rng();
    for _ in 0..3000 {
        lines.push(number(&mut rng));
    }
    for _ in 0..2000 {
        lines.push(value(&mut rng, 0));
    }
    lines
}

#[test]
fn canonical_json_is_byte_for_byte_the_rfc8785_packages() {
    let lines = corpus();
    let dir = std::env::temp_dir().join(format!("mcpgov-rfc8785-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("corpus.jsonl");
    std::fs::write(&input, lines.join("\n") + "\n").unwrap();
    let out = Command::new(python())
        .arg(here().join("rfc8785-python/canonicalize.py"))
        .arg(&input)
        .output()
        .expect("python runs");
    std::fs::remove_dir_all(&dir).ok();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(theirs.len(), lines.len());
    let mut refused = 0;
    for (line, theirs) in lines.iter().zip(&theirs) {
        match ours(line) {
            Ok(ours) => assert_eq!(&ours, theirs, "differs from rfc8785 on {line}"),
            Err(e) => {
                assert_eq!(theirs, "ERR", "we refused {line} ({e}), rfc8785 did not");
                refused += 1;
            }
        }
    }
    // The corpus's deliberately bad inputs, and only those (random ones are valid).
    assert_eq!(refused, 4);
}
