//! Where each document of a YAML or JSON stream starts, so a report can point at an
//! object's line (SARIF `region.startLine`) without a position-tracking parser: a cheap
//! scan of document markers, trusted only when it counts as many documents as the
//! parser returned.

/// The 1-based line each non-empty document starts on: its first line that is not
/// blank, a comment, a directive or a marker (the marker's own line when content follows
/// `--- ` on it).
pub(super) fn document_lines(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let mut started = false;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let marker = line == "---" || line.starts_with("--- ") || line.starts_with("---\t");
        if marker {
            let rest = line[3..].trim();
            started = !rest.is_empty() && !rest.starts_with('#');
            if started {
                out.push(n);
            }
            continue;
        }
        if line == "..." || line.starts_with("... ") {
            started = false;
            continue;
        }
        let t = line.trim();
        if started || t.is_empty() || t.starts_with('#') || t.starts_with('%') {
            continue;
        }
        out.push(n);
        started = true;
    }
    out
}

/// The start line of each of `docs` (`None` for null, empty documents), or all `None`
/// when the scan and the parser disagree on how many documents there are.
pub(super) fn assign(text: &str, docs: &[serde_json::Value]) -> Vec<Option<usize>> {
    let lines = document_lines(text);
    let non_empty = docs.iter().filter(|d| !d.is_null()).count();
    if lines.len() != non_empty {
        return vec![None; docs.len()];
    }
    let mut it = lines.into_iter();
    docs.iter()
        .map(|d| if d.is_null() { None } else { it.next() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_start_at_their_first_content_line() {
        assert_eq!(document_lines("a: 1\nb: 2\n"), [1]);
        assert_eq!(document_lines("# c\n\na: 1\n---\n# c\nb: 2\n"), [3, 6]);
        assert_eq!(document_lines("---\na: 1\n---\n---\nb: 2\n---\n"), [2, 5]);
        assert_eq!(
            document_lines("%YAML 1.2\n--- {a: 1}\n...\n--- # x\nb: [\n  1]\n"),
            [2, 5]
        );
        assert_eq!(document_lines("a: |\n  ---\n  x\n"), [1]);
        assert_eq!(document_lines(""), Vec::<usize>::new());
    }

    #[test]
    fn lines_are_kept_only_when_the_counts_agree() {
        let v = |s: &str| serde_json::from_str::<serde_json::Value>(s).unwrap();
        let text = "a: 1\n---\n---\nb: 2\n";
        assert_eq!(
            assign(text, &[v("{}"), v("null"), v("{}")]),
            [Some(1), None, Some(4)]
        );
        // A document the scan cannot see (a bare `null`) makes every line unknown.
        assert_eq!(
            assign("null\n---\nb: 2\n", &[v("null"), v("{}")]),
            [None, None]
        );
    }
}
