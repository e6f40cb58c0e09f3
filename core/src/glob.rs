//! Glob languages of the engine: URI globs (with an exact overlap test) and
//! tool/server-name globs.
//!
//! URI globs apply to canonical URI strings (see [`crate::uri`]):
//! - `*` matches any run of characters except `/` (possibly empty);
//! - `**` matches any run of characters, `/` included (possibly empty);
//! - a `**` that is a whole segment followed by `/` (the text `/**/`, or
//!   `**/` at the very start) also matches zero segments: `/a/**/b` matches
//!   `/a/b` as well as `/a/x/y/b`;
//! - three or more consecutive stars are invalid; every other character is
//!   literal.
//!
//! Each pattern compiles to a linear NFA with one state per token, which
//! gives linear-time matching and an exact overlap test (BFS over the
//! product automaton) with a shortest witness string.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{Hash, Hasher};

/// Why a string is not a valid URI glob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GlobError {
    /// The pattern is the empty string.
    Empty,
    /// Three or more consecutive `*` starting at this byte offset.
    TooManyStars { at: usize },
}

impl fmt::Display for GlobError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GlobError::Empty => f.write_str("empty glob pattern"),
            GlobError::TooManyStars { at } => {
                write!(f, "three or more consecutive `*` at byte {at}")
            }
        }
    }
}

impl std::error::Error for GlobError {}

/// How much search work a pattern comparison may do, in steps (one step is one
/// node of a product or subset search: tens of nanoseconds). Comparing two URI globs
/// is quadratic in their lengths (overlap) or exponential in the worst case
/// (inclusion), and the patterns come from tenants: every comparison of input runs
/// within a budget, and the caller fails closed when it runs out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    left: u64,
}

/// A comparison ran out of its [`Budget`] before it could decide.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OverBudget;

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("pattern comparison over its work budget")
    }
}

impl std::error::Error for OverBudget {}

impl Budget {
    pub const fn new(steps: u64) -> Self {
        Budget { left: steps }
    }

    pub const fn unlimited() -> Self {
        Budget { left: u64::MAX }
    }

    pub fn left(&self) -> u64 {
        self.left
    }

    /// Takes `steps`, or fails (leaving nothing) when fewer are left.
    pub fn spend(&mut self, steps: u64) -> Result<(), OverBudget> {
        match self.left.checked_sub(steps) {
            Some(rest) => {
                self.left = rest;
                Ok(())
            }
            None => {
                self.left = 0;
                Err(OverBudget)
            }
        }
    }
}

/// Checks URI glob syntax.
pub fn validate_glob(pattern: &str) -> Result<(), GlobError> {
    compile(pattern).map(|_| ())
}

/// True if `s` contains a glob metacharacter.
pub fn has_glob(s: &str) -> bool {
    s.contains('*')
}

/// Tool-name / server-name globs: `*` matches any run of characters (names
/// have no segments); every other character is literal.
///
/// Two-pointer star matching: on a mismatch only the most recent `*` is
/// retried one character further, so the cost is O(|pattern| * |name|) at
/// worst, with no allocation. Works on bytes: literals are whole UTF-8
/// sequences, so they can only match at character boundaries.
pub fn name_matches(pattern: &str, name: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    // (index of the last `*` in p, position in t it currently resumes at)
    let mut backtrack: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            backtrack = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((star, resume)) = backtrack {
            // Let that `*` swallow one more character and retry.
            backtrack = Some((star, resume + 1));
            pi = star + 1;
            ti = resume + 1;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&b| b == b'*')
}

/// What a state's self-loop consumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loop {
    None,
    NotSlash,
    Any,
}

/// NFA state. State `i` only moves to itself (loop), to `i + 1` (advance)
/// or by epsilon to `i + 1` / `i + 2`; the state after the last one accepts.
///
/// | token           | states                                          |
/// |-----------------|-------------------------------------------------|
/// | literal `c`     | advance on `c`                                  |
/// | `*`             | loop on NotSlash, epsilon to next               |
/// | `**`            | loop on Any, epsilon to next                    |
/// | `**/` (segment) | A: epsilon to B and past B; B: loop on Any, advance on `/` |
///
/// The last row is `(.*/)?`: either skip the whole `**/`, or any text
/// ending in `/`. The epsilon past B has to leave from a separate state A:
/// on B itself it would also fire after B consumed text, i.e. `.*` with an
/// optional `/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    lp: Loop,
    advance: Option<char>,
    /// Epsilon moves: bit 0 to `i + 1`, bit 1 to `i + 2`.
    eps: u8,
}

const EPS_NEXT: u8 = 1;
const EPS_OVER: u8 = 2;

impl State {
    const fn new(lp: Loop, advance: Option<char>, eps: u8) -> Self {
        State { lp, advance, eps }
    }

    /// Epsilon destinations as offsets from this state.
    fn eps_offsets(self) -> impl Iterator<Item = usize> {
        [(EPS_NEXT, 1), (EPS_OVER, 2)]
            .into_iter()
            .filter(move |(bit, _)| self.eps & bit != 0)
            .map(|(_, off)| off)
    }

    /// Up to two consuming transitions: (class, destination offset 0 or 1).
    fn transitions(self) -> impl Iterator<Item = (Class, usize)> {
        let lp = match self.lp {
            Loop::None => None,
            Loop::NotSlash => Some((Class::NotSlash, 0)),
            Loop::Any => Some((Class::Any, 0)),
        };
        lp.into_iter()
            .chain(self.advance.map(|c| (Class::Lit(c), 1)))
    }

    fn loops_on(self, c: char) -> bool {
        match self.lp {
            Loop::None => false,
            Loop::NotSlash => c != '/',
            Loop::Any => true,
        }
    }
}

/// A character class labelling an NFA transition.
#[derive(Clone, Copy, Debug)]
enum Class {
    Lit(char),
    NotSlash,
    Any,
}

impl Class {
    fn accepts(self, c: char) -> bool {
        match self {
            Class::Lit(l) => l == c,
            Class::NotSlash => c != '/',
            Class::Any => true,
        }
    }
}

/// A character in both classes, if any.
fn meet(a: Class, b: Class) -> Option<char> {
    // Any character other than `/` serves for two open classes. (The
    // product search never asks: a loop/loop pair leads back to the same
    // node and is skipped, so every step it takes involves a literal.)
    const FILLER: char = 'x';
    match (a, b) {
        (Class::Lit(x), other) | (other, Class::Lit(x)) => other.accepts(x).then_some(x),
        _ => Some(FILLER),
    }
}

struct Compiled {
    states: Vec<State>,
    /// Byte length of the literal text before the first `*`.
    prefix_len: usize,
    /// Byte offset where the literal text after the last glob token starts.
    suffix_start: usize,
}

fn compile(src: &str) -> Result<Compiled, GlobError> {
    if src.is_empty() {
        return Err(GlobError::Empty);
    }
    let bytes = src.as_bytes();
    let mut states = Vec::with_capacity(src.len());
    let mut suffix_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'*' {
            let c = src[i..].chars().next().expect("i is a char boundary");
            states.push(State::new(Loop::None, Some(c), 0));
            i += c.len_utf8();
            continue;
        }
        let run = bytes[i..].iter().take_while(|&&b| b == b'*').count();
        let state = match run {
            1 => State::new(Loop::NotSlash, None, EPS_NEXT),
            2 => {
                let starts_segment = i == 0 || bytes[i - 1] == b'/';
                if starts_segment && bytes.get(i + 2) == Some(&b'/') {
                    // The token owns its trailing `/` so it can vanish whole.
                    states.push(State::new(Loop::None, None, EPS_NEXT | EPS_OVER));
                    i += 1;
                    State::new(Loop::Any, Some('/'), 0)
                } else {
                    State::new(Loop::Any, None, EPS_NEXT)
                }
            }
            _ => return Err(GlobError::TooManyStars { at: i }),
        };
        states.push(state);
        i += run;
        suffix_start = i;
    }
    let prefix_len = src.find('*').unwrap_or(src.len());
    Ok(Compiled {
        states,
        prefix_len,
        suffix_start: suffix_start.max(prefix_len),
    })
}

/// A compiled URI glob. Equality and hashing use the source string only.
#[derive(Clone)]
pub struct UriPattern {
    src: Box<str>,
    states: Box<[State]>,
    prefix_len: usize,
    suffix_start: usize,
    /// Number of literal states before the first glob token.
    prefix_states: usize,
    /// Number of literal states after the last glob token.
    suffix_states: usize,
}

impl PartialEq for UriPattern {
    fn eq(&self, other: &Self) -> bool {
        self.src == other.src
    }
}

impl Eq for UriPattern {}

impl Hash for UriPattern {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.src.hash(state);
    }
}

impl fmt::Debug for UriPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("UriPattern").field(&self.src).finish()
    }
}

/// Set of NFA states, one bit per state.
struct StateSet<'a>(&'a mut [u64]);

impl StateSet<'_> {
    fn clear(&mut self) {
        self.0.fill(0);
    }
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn contains(&self, i: usize) -> bool {
        (self.0[i / 64] >> (i % 64)) & 1 == 1
    }
    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

/// Reusable buffers for the product BFS, so `overlap` does not allocate per
/// call beyond the witness it returns.
#[derive(Default)]
struct Scratch {
    /// `stamp[n] == epoch` marks node `n` as seen in the current search,
    /// which avoids clearing the arrays between calls.
    stamp: Vec<u32>,
    epoch: u32,
    dist: Vec<u32>,
    parent: Vec<u32>,
    via: Vec<Option<char>>,
    queue: VecDeque<u32>,
    witness: Vec<char>,
}

impl Scratch {
    fn begin(&mut self, nodes: usize) {
        if self.stamp.len() < nodes {
            self.stamp.resize(nodes, 0);
            self.dist.resize(nodes, 0);
            self.parent.resize(nodes, 0);
            self.via.resize(nodes, None);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.fill(0);
            self.epoch = 1;
        }
        self.queue.clear();
    }

    /// Records a path to `node`; true if it is better than any known one.
    fn relax(&mut self, node: u32, from: u32, via: Option<char>, dist: u32) -> bool {
        let n = node as usize;
        if self.stamp[n] == self.epoch && self.dist[n] <= dist {
            return false;
        }
        self.stamp[n] = self.epoch;
        self.dist[n] = dist;
        self.parent[n] = from;
        self.via[n] = via;
        true
    }
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

impl UriPattern {
    /// Compiles a canonical URI glob (the caller canonicalises first).
    pub fn new(canonical: &str) -> Result<Self, GlobError> {
        let Compiled {
            states,
            prefix_len,
            suffix_start,
        } = compile(canonical)?;
        let prefix_states = canonical[..prefix_len].chars().count();
        let suffix_states = canonical[suffix_start..].chars().count();
        Ok(UriPattern {
            src: canonical.into(),
            states: states.into_boxed_slice(),
            prefix_len,
            suffix_start,
            prefix_states,
            suffix_states,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.src
    }

    /// True if the pattern has no `*`, i.e. it denotes exactly one URI.
    pub fn is_literal(&self) -> bool {
        self.prefix_len == self.src.len()
    }

    fn prefix(&self) -> &str {
        &self.src[..self.prefix_len]
    }

    fn suffix(&self) -> &str {
        &self.src[self.suffix_start..]
    }

    /// True if `text` is in the language of this glob.
    pub fn matches(&self, text: &str) -> bool {
        if self.is_literal() {
            return *self.src == *text;
        }
        let (prefix, suffix) = (self.prefix(), self.suffix());
        if text.len() < prefix.len() + suffix.len()
            || !text.starts_with(prefix)
            || !text.ends_with(suffix)
        {
            return false;
        }
        // The literal prefix and suffix states are deterministic, so only the
        // middle needs simulating: from the first glob state, and accepting
        // iff the first suffix state is reached when the middle runs out.
        let middle = &text[prefix.len()..text.len() - suffix.len()];
        let start = self.prefix_states;
        let goal = self.states.len() - self.suffix_states;

        let words = (self.states.len() + 1).div_ceil(64);
        let mut inline = [0u64; 16];
        let mut heap = Vec::new();
        let buf: &mut [u64] = if 2 * words <= inline.len() {
            &mut inline[..2 * words]
        } else {
            heap.resize(2 * words, 0);
            &mut heap
        };
        let (a, b) = buf.split_at_mut(words);
        let (mut cur, mut next) = (StateSet(a), StateSet(b));
        self.insert_closed(&mut cur, start);
        for c in middle.chars() {
            next.clear();
            for i in start..goal {
                if !cur.contains(i) {
                    continue;
                }
                let s = self.states[i];
                if s.loops_on(c) {
                    self.insert_closed(&mut next, i);
                }
                if s.advance == Some(c) {
                    self.insert_closed(&mut next, i + 1);
                }
            }
            if next.is_empty() {
                return false;
            }
            std::mem::swap(&mut cur, &mut next);
        }
        cur.contains(goal)
    }

    /// Inserts `i` and every state reachable from it by epsilon moves.
    ///
    /// A loop, not recursion: a pattern of thousands of `**/` segments is one long
    /// epsilon chain, and recursing along it overflowed the stack. Epsilon moves only
    /// go forward; where a state has two (the `**/` entry state A), the first leads to
    /// B, which has none of its own (see `State`), so one cursor follows the chain.
    fn insert_closed(&self, set: &mut StateSet<'_>, i: usize) {
        let mut k = i;
        loop {
            // Members are always inserted with their closure: nothing more to do.
            if set.contains(k) {
                return;
            }
            set.insert(k);
            let Some(s) = self.states.get(k) else { return };
            match (s.eps & EPS_NEXT != 0, s.eps & EPS_OVER != 0) {
                (true, true) => {
                    debug_assert_eq!(self.states[k + 1].eps, 0, "B has no epsilon moves");
                    if !set.contains(k + 1) {
                        set.insert(k + 1);
                    }
                    k += 2;
                }
                (true, false) => k += 1,
                (false, true) => k += 2,
                (false, false) => return,
            }
        }
    }

    /// Some string matched by both globs (a shortest one), or `None` if their
    /// languages are disjoint. Exact: no false positives or negatives. Unbounded work:
    /// for trusted patterns only (tests, benches); input goes through `try_overlap`.
    pub fn overlap(&self, other: &UriPattern) -> Option<String> {
        self.try_overlap(other, &mut Budget::unlimited())
            .expect("an unlimited budget never runs out")
    }

    /// `overlap` within `budget` (charged for the work done, whatever the answer).
    pub fn try_overlap(
        &self,
        other: &UriPattern,
        budget: &mut Budget,
    ) -> Result<Option<String>, OverBudget> {
        match (self.is_literal(), other.is_literal()) {
            (true, true) => return Ok((self.src == other.src).then(|| self.src.to_string())),
            (true, false) => return Ok(other.matches(&self.src).then(|| self.src.to_string())),
            (false, true) => return Ok(self.matches(&other.src).then(|| other.src.to_string())),
            (false, false) => {}
        }
        // Every match starts with the literal prefix and ends with the literal
        // suffix, so incompatible ones rule out overlap cheaply.
        let (p1, p2) = (self.prefix(), other.prefix());
        let (s1, s2) = (self.suffix(), other.suffix());
        if !(p1.starts_with(p2) || p2.starts_with(p1)) || !(s1.ends_with(s2) || s2.ends_with(s1)) {
            return Ok(None);
        }
        SCRATCH.with(|scratch| self.product_search(other, &mut scratch.borrow_mut(), budget))
    }

    /// Shorthand for `self.overlap(other).is_some()` (unbounded, like `overlap`).
    pub fn overlaps(&self, other: &UriPattern) -> bool {
        self.overlap(other).is_some()
    }

    /// 0-1 BFS over pairs of states (epsilon moves cost 0, characters 1),
    /// so the witness found is a shortest common string.
    fn product_search(
        &self,
        other: &UriPattern,
        sc: &mut Scratch,
        budget: &mut Budget,
    ) -> Result<Option<String>, OverBudget> {
        let (n, m) = (self.states.len(), other.states.len());
        let width = m + 1;
        let nodes = (n + 1) * width;
        assert!(u32::try_from(nodes).is_ok(), "patterns too long");
        let node = |i: usize, j: usize| (i * width + j) as u32;
        let accept = node(n, m);

        sc.begin(nodes);
        sc.relax(0, 0, None, 0);
        sc.queue.push_back(0);
        let mut found = false;
        while let Some(cur) = sc.queue.pop_front() {
            budget.spend(1)?;
            if cur == accept {
                found = true;
                break;
            }
            let d = sc.dist[cur as usize];
            let (i, j) = (cur as usize / width, cur as usize % width);
            let s = self.states.get(i).copied();
            let t = other.states.get(j).copied();

            for off in s.into_iter().flat_map(State::eps_offsets) {
                if sc.relax(node(i + off, j), cur, None, d) {
                    sc.queue.push_front(node(i + off, j));
                }
            }
            for off in t.into_iter().flat_map(State::eps_offsets) {
                if sc.relax(node(i, j + off), cur, None, d) {
                    sc.queue.push_front(node(i, j + off));
                }
            }
            let (Some(s), Some(t)) = (s, t) else { continue };
            for (c1, di) in s.transitions() {
                for (c2, dj) in t.transitions() {
                    // Both self-loops: back to the same pair, never useful.
                    if di == 0 && dj == 0 {
                        continue;
                    }
                    if let Some(c) = meet(c1, c2) {
                        let next = node(i + di, j + dj);
                        if sc.relax(next, cur, Some(c), d + 1) {
                            sc.queue.push_back(next);
                        }
                    }
                }
            }
        }
        if !found {
            return Ok(None);
        }
        sc.witness.clear();
        let mut at = accept;
        while at != 0 {
            if let Some(c) = sc.via[at as usize] {
                sc.witness.push(c);
            }
            at = sc.parent[at as usize];
        }
        Ok(Some(sc.witness.iter().rev().collect()))
    }
}

// ---- language inclusion ----

/// Per-state epsilon closures of one pattern (state lists, ascending) and
/// whether each closure holds the accepting state.
struct Closures {
    of: Vec<Vec<u32>>,
    accepting: Vec<bool>,
}

/// On-the-fly subset construction of one pattern's NFA over a finite
/// alphabet of representative characters. Subsets are epsilon-closed
/// bitsets, interned to dense ids; transitions are memoised.
struct SubsetDfa<'p> {
    pattern: &'p UriPattern,
    reps: &'p [char],
    /// `u64` words per subset.
    words: usize,
    /// Subset `s` is `sets[s * words..(s + 1) * words]`.
    sets: Vec<u64>,
    ids: HashMap<Box<[u64]>, u32>,
    /// `trans[s * reps.len() + c]`, `UNKNOWN` until computed.
    trans: Vec<u32>,
    accepting: Vec<bool>,
    /// The subset accepts every continuation (see `sink`).
    universal: Vec<bool>,
    /// States with a `**` self-loop whose closure accepts: a subset holding
    /// one keeps it (and acceptance) after any character.
    sink: Box<[u64]>,
}

/// Marks a transition of [`SubsetDfa`] not computed yet.
const UNKNOWN: u32 = u32::MAX;

impl<'p> SubsetDfa<'p> {
    fn new(pattern: &'p UriPattern, reps: &'p [char]) -> Self {
        let n = pattern.states.len();
        let words = (n + 1).div_ceil(64);
        let mut sink = vec![0u64; words].into_boxed_slice();
        let closures = pattern.closures();
        for (k, s) in pattern.states.iter().enumerate() {
            if s.lp == Loop::Any && closures.accepting[k] {
                StateSet(&mut sink).insert(k);
            }
        }
        SubsetDfa {
            pattern,
            reps,
            words,
            sets: Vec::new(),
            ids: HashMap::new(),
            trans: Vec::new(),
            accepting: Vec::new(),
            universal: Vec::new(),
            sink,
        }
    }

    fn intern(&mut self, set: &[u64]) -> u32 {
        if let Some(&id) = self.ids.get(set) {
            return id;
        }
        let id = u32::try_from(self.accepting.len()).expect("too many subsets");
        let n = self.pattern.states.len();
        self.accepting.push((set[n / 64] >> (n % 64)) & 1 == 1);
        self.universal
            .push(set.iter().zip(&self.sink).any(|(w, m)| w & m != 0));
        self.sets.extend_from_slice(set);
        self.trans
            .extend(std::iter::repeat_n(UNKNOWN, self.reps.len()));
        self.ids.insert(set.into(), id);
        id
    }

    /// True if subset `s` ⊆ subset `t`.
    fn is_subset(&self, s: u32, t: u32) -> bool {
        let w = self.words;
        let (s, t) = (s as usize * w, t as usize * w);
        self.sets[s..s + w]
            .iter()
            .zip(&self.sets[t..t + w])
            .all(|(x, y)| x & !y == 0)
    }

    /// The closure of the start state.
    fn start(&mut self) -> u32 {
        let mut set = vec![0u64; self.words];
        self.pattern.insert_closed(&mut StateSet(&mut set), 0);
        self.intern(&set)
    }

    /// The subset reached from subset `s` on `self.reps[ci]`.
    fn step(&mut self, s: u32, ci: usize) -> u32 {
        let slot = s as usize * self.reps.len() + ci;
        if self.trans[slot] != UNKNOWN {
            return self.trans[slot];
        }
        let c = self.reps[ci];
        let w = self.words;
        let from = &self.sets[s as usize * w..(s as usize + 1) * w];
        let mut next = vec![0u64; w];
        let mut set = StateSet(&mut next);
        for (k, st) in self.pattern.states.iter().enumerate() {
            if (from[k / 64] >> (k % 64)) & 1 == 0 {
                continue;
            }
            if st.loops_on(c) {
                self.pattern.insert_closed(&mut set, k);
            }
            if st.advance == Some(c) {
                self.pattern.insert_closed(&mut set, k + 1);
            }
        }
        let t = self.intern(&next);
        self.trans[slot] = t;
        t
    }
}

/// The alphabet the inclusion search steps on: every literal of the given
/// patterns, `/`, and one character that is neither. Characters outside
/// this set take exactly the same transitions as that last one in every
/// automaton involved (only `NotSlash` and `Any` accept them), so
/// exploring the representatives alone is exact.
fn representatives(patterns: &[&UriPattern]) -> Vec<char> {
    let mut reps: Vec<char> = patterns
        .iter()
        .flat_map(|p| p.states.iter().filter_map(|s| s.advance))
        .chain(['/'])
        .collect();
    reps.sort_unstable();
    reps.dedup();
    let other = ['x', 'y', 'z']
        .into_iter()
        .chain((0x21..=0x10FFFF).filter_map(char::from_u32))
        .find(|c| *c != '*' && reps.binary_search(c).is_err())
        .expect("finitely many literals");
    reps.push(other);
    reps
}

impl UriPattern {
    /// True iff every string matching both `a` and `b` also matches `self`
    /// (L(a) ∩ L(b) ⊆ L(self)). Exact. Vacuously true when `a` and `b` do
    /// not overlap. Unbounded work: for trusted patterns (tests, benches).
    pub fn includes_intersection(&self, a: &UriPattern, b: &UriPattern) -> bool {
        self.try_includes_intersection(a, b, &mut Budget::unlimited())
            .expect("an unlimited budget never runs out")
    }

    /// `includes_intersection` within `budget`.
    pub fn try_includes_intersection(
        &self,
        a: &UriPattern,
        b: &UriPattern,
        budget: &mut Budget,
    ) -> Result<bool, OverBudget> {
        Ok(self.inclusion_counterexample(a, Some(b), budget)?.is_none())
    }

    /// True iff every string matching `other` also matches `self`
    /// (L(other) ⊆ L(self)). Exact. Unbounded work.
    pub fn includes(&self, other: &UriPattern) -> bool {
        self.inclusion_counterexample(other, None, &mut Budget::unlimited())
            .expect("an unlimited budget never runs out")
            .is_none()
    }

    /// A shortest string matched by `a` and by `b` (when given) but not by
    /// `self`, or `None` if there is none, i.e. the inclusion holds.
    fn inclusion_counterexample(
        &self,
        a: &UriPattern,
        b: Option<&UriPattern>,
        budget: &mut Budget,
    ) -> Result<Option<String>, OverBudget> {
        let b = b.filter(|b| *b != a);
        if self == a || b.is_some_and(|b| self == b) {
            return Ok(None);
        }
        match b {
            Some(b) => {
                // A shortest common string is a shortest counterexample if
                // `self` rejects it; with a literal side it is the only
                // common string.
                let Some(w) = a.try_overlap(b, budget)? else {
                    return Ok(None);
                };
                if !self.matches(&w) {
                    return Ok(Some(w));
                }
                if a.is_literal() || b.is_literal() {
                    return Ok(None);
                }
            }
            None if a.is_literal() => {
                return Ok((!self.matches(&a.src)).then(|| a.src.to_string()));
            }
            None => {}
        }
        self.inclusion_search(a, b, budget)
    }

    /// BFS over triples (state of `a`, state of `b`, epsilon-closed subset
    /// of `self`'s states); `a` and `b` stay nondeterministic, `self` is
    /// determinised on the fly. Without `b` its component stays 0 and
    /// counts as accepting. A triple where `a` and `b` accept and the
    /// subset does not spells a counterexample; BFS makes it a shortest one.
    ///
    /// Antichain pruning: a triple is skipped when one with the same `a`
    /// and `b` states and a subset of its `self` states was reached
    /// already. Fewer `self` states accept less, so whatever counterexample
    /// the skipped triple leads to, the earlier one leads to one no longer;
    /// the search stays exact and shortest. This tames the exponential
    /// subset blow-up in common cases; the worst case stays exponential
    /// (inclusion between such patterns is intractable in general).
    fn inclusion_search(
        &self,
        a: &UriPattern,
        b: Option<&UriPattern>,
        budget: &mut Budget,
    ) -> Result<Option<String>, OverBudget> {
        // The closures below cost about one step per state pair.
        let sizes = [Some(self), Some(a), b].map(|p| p.map_or(0, |p| p.states.len() as u64));
        budget.spend(sizes.iter().map(|n| n * n / 64 + n).sum())?;
        let mut pats = vec![self, a];
        pats.extend(b);
        let reps = representatives(&pats);
        let mut dfa = SubsetDfa::new(self, &reps);
        let start = dfa.start();
        if dfa.universal[start as usize] {
            return Ok(None);
        }
        let ca = a.closures();
        let cb = b.map(UriPattern::closures);
        let bad = |(i, j, s): (u32, u32, u32), dfa: &SubsetDfa<'_>| {
            ca.accepting[i as usize]
                && cb.as_ref().is_none_or(|cb| cb.accepting[j as usize])
                && !dfa.accepting[s as usize]
        };

        // Nodes in BFS order; `nodes[head..]` is the queue.
        let mut nodes: Vec<(u32, u32, u32)> = vec![(0, 0, start)];
        let mut parent: Vec<u32> = vec![0];
        let mut via: Vec<char> = vec!['\0'];
        // Per pair of `a`/`b` states, the subsets seen there, kept
        // ⊆-minimal (an antichain).
        let mut seen: HashMap<(u32, u32), Vec<u32>> = HashMap::from([((0, 0), vec![start])]);
        let mut found = bad(nodes[0], &dfa).then_some(0);
        let (mut next_a, mut next_b) = (Vec::new(), vec![0]);
        let mut head = 0;
        'bfs: while found.is_none() && head < nodes.len() {
            // One step per representative tried, each a subset step at worst.
            budget.spend(reps.len() as u64)?;
            let (i, j, s) = nodes[head];
            for (ci, &c) in reps.iter().enumerate() {
                a.successors(&ca.of[i as usize], c, &mut next_a);
                if next_a.is_empty() {
                    continue;
                }
                if let (Some(b), Some(cb)) = (b, &cb) {
                    b.successors(&cb.of[j as usize], c, &mut next_b);
                    if next_b.is_empty() {
                        continue;
                    }
                }
                let t = dfa.step(s, ci);
                if dfa.universal[t as usize] {
                    continue;
                }
                for &i2 in &next_a {
                    for &j2 in &next_b {
                        let key = (i2, j2, t);
                        let chain = seen.entry((i2, j2)).or_default();
                        if chain.iter().any(|&old| dfa.is_subset(old, t)) {
                            continue;
                        }
                        chain.retain(|&old| !dfa.is_subset(t, old));
                        chain.push(t);
                        let id = u32::try_from(nodes.len()).expect("search too large");
                        nodes.push(key);
                        parent.push(head as u32);
                        via.push(c);
                        if bad(key, &dfa) {
                            found = Some(id);
                            break 'bfs;
                        }
                    }
                }
            }
            head += 1;
        }
        let Some(mut at) = found else {
            return Ok(None);
        };
        let mut witness = Vec::new();
        while at != 0 {
            witness.push(via[at as usize]);
            at = parent[at as usize];
        }
        Ok(Some(witness.iter().rev().collect()))
    }

    fn closures(&self) -> Closures {
        let n = self.states.len();
        let mut buf = vec![0u64; (n + 1).div_ceil(64)];
        let mut of = Vec::with_capacity(n + 1);
        let mut accepting = Vec::with_capacity(n + 1);
        for i in 0..=n {
            let mut set = StateSet(&mut buf);
            set.clear();
            self.insert_closed(&mut set, i);
            // Epsilon moves only go forward.
            of.push(
                (i..=n)
                    .filter(|&k| set.contains(k))
                    .map(|k| k as u32)
                    .collect(),
            );
            accepting.push(set.contains(n));
        }
        Closures { of, accepting }
    }

    /// States reached on `c` from the states in `closure`, sorted and
    /// deduplicated, into `out`.
    fn successors(&self, closure: &[u32], c: char, out: &mut Vec<u32>) {
        out.clear();
        for &k in closure {
            let Some(s) = self.states.get(k as usize) else {
                continue;
            };
            for (class, off) in s.transitions() {
                if class.accepts(c) {
                    out.push(k + off as u32);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use regex::Regex;
    use std::sync::OnceLock;

    fn pat(s: &str) -> UriPattern {
        UriPattern::new(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
    }

    #[test]
    fn syntax() {
        assert_eq!(validate_glob(""), Err(GlobError::Empty));
        assert_eq!(
            validate_glob("a/***"),
            Err(GlobError::TooManyStars { at: 2 })
        );
        assert_eq!(
            validate_glob("****"),
            Err(GlobError::TooManyStars { at: 0 })
        );
        assert!(validate_glob("a/**/*").is_ok());
        assert!(validate_glob("*").is_ok());
        assert!(validate_glob("**").is_ok());
        assert!(validate_glob("a?b[c]").is_ok());
        assert!(UriPattern::new("x***").is_err());
        assert!(!GlobError::Empty.to_string().is_empty());
        assert!(GlobError::TooManyStars { at: 3 }.to_string().contains('3'));
    }

    #[test]
    fn literal_patterns() {
        let p = pat("file:///a/b.txt");
        assert!(p.is_literal());
        assert!(!has_glob(p.as_str()));
        assert!(p.matches("file:///a/b.txt"));
        assert!(!p.matches("file:///a/b.txtx"));
        assert!(!p.matches("file:///a/b.tx"));
        assert!(!pat("a*").is_literal());
        assert!(has_glob("a*"));
    }

    #[test]
    fn single_star_stays_in_segment() {
        let p = pat("file:///a/*.env");
        assert!(p.matches("file:///a/.env"));
        assert!(p.matches("file:///a/prod.env"));
        assert!(!p.matches("file:///a/x/prod.env"));
        assert!(!p.matches("file:///a/prod.env2"));
        let h = pat("https://*.example.com/*");
        assert!(h.matches("https://api.example.com/"));
        assert!(h.matches("https://api.example.com/x"));
        assert!(!h.matches("https://api.example.com/x/y"));
        assert!(!h.matches("https://evil.com/.example.com/x"));
        assert!(pat("*").matches(""));
        assert!(!pat("*").matches("/"));
    }

    #[test]
    fn double_star_crosses_segments() {
        let p = pat("file:///a/**");
        assert!(p.matches("file:///a/"));
        assert!(p.matches("file:///a/b/c/d"));
        assert!(!p.matches("file:///a"));
        let q = pat("file:///a**z");
        assert!(q.matches("file:///az"));
        assert!(q.matches("file:///a/b/z"));
        assert!(!q.matches("file:///a/b/z/"));
        assert!(pat("**").matches(""));
        assert!(pat("**").matches("/x/y"));
    }

    #[test]
    fn whole_segment_double_star_matches_zero_segments() {
        let p = pat("file:///a/**/b");
        assert!(p.matches("file:///a/b"));
        assert!(p.matches("file:///a/x/b"));
        assert!(p.matches("file:///a/x/y/b"));
        assert!(p.matches("file:///a//b"));
        assert!(!p.matches("file:///ab"));
        assert!(!p.matches("file:///a/xb"));
        assert!(!p.matches("file:///a/b/c"));

        let lead = pat("**/b");
        assert!(lead.matches("b"));
        assert!(lead.matches("x/b"));
        assert!(lead.matches("/b"));
        assert!(!lead.matches("xb"));

        // Not a whole segment: ordinary `**`.
        let partial = pat("/a/x**/b");
        assert!(!partial.matches("/a/b"));
        assert!(partial.matches("/a/x/b"));
        assert!(partial.matches("/a/xy/z/b"));

        // Adjacent segment globs each may vanish.
        let twice = pat("/**/**/b");
        assert!(twice.matches("/b"));
        assert!(twice.matches("/x/b"));
        assert!(twice.matches("/x/y/b"));

        let env = pat("file:///Workspace/**/*.ENV");
        assert!(env.matches("file:///Workspace/.ENV"));
        assert!(env.matches("file:///Workspace/a/b/prod.ENV"));
        assert!(!env.matches("file:///Workspace/a/b/prod.env"));
    }

    #[test]
    fn non_ascii_literals() {
        let p = pat("urn:é*ü/**");
        assert!(p.matches("urn:éü/"));
        assert!(p.matches("urn:éxxü/y/z"));
        assert!(!p.matches("urn:eü/"));
        let w = p.overlap(&pat("urn:*ü/ä")).unwrap();
        assert_eq!(w, "urn:éü/ä");
    }

    #[test]
    fn overlap_examples() {
        let check = |a: &str, b: &str, expect: bool| {
            let (pa, pb) = (pat(a), pat(b));
            let w = pa.overlap(&pb);
            assert_eq!(w.is_some(), expect, "{a} vs {b}: {w:?}");
            assert_eq!(pb.overlaps(&pa), expect, "{b} vs {a}");
            if let Some(w) = w {
                assert!(pa.matches(&w) && pb.matches(&w), "{a} vs {b}: {w}");
            }
        };
        check("file:///a/*", "file:///a/b", true);
        check("file:///a/*", "file:///a/b/c", false);
        check("file:///a/**", "file:///a/b/c", true);
        check("file:///a/**/b", "file:///a/b", true);
        check("file:///a/**/*.env", "file:///a/*/x.env", true);
        check("file:///a/*.env", "file:///b/*.env", false);
        check("file:///*/a", "file:///b/*", true);
        check(
            "https://*.example.com/*",
            "https://api.example.com/v1",
            true,
        );
        check("https://*.example.com/*", "https://*.example.org/*", false);
        check("https://*.example.com/*", "https://*/a/b", false);
        check("https://*.example.com/**", "https://*/a/b", true);
        check("a*b", "*c", false);
        check("a*/", "*b*", false);
        check("a*/", "**b**", true);
        check("**a", "b**", true);
        check("*/*", "*", false);
        check("**/a", "a", true);
        check("**", "**", true);
        check("x", "x", true);
        check("x", "y", false);

        assert_eq!(pat("a*").overlap(&pat("*b")).as_deref(), Some("ab"));
        assert_eq!(pat("/**/b").overlap(&pat("/*")).as_deref(), Some("/b"));
        assert_eq!(pat("a/*").overlap(&pat("*/*")).as_deref(), Some("a/"));
    }

    #[test]
    fn name_globs() {
        assert!(name_matches("read_file", "read_file"));
        assert!(!name_matches("read_file", "read_files"));
        assert!(!name_matches("read_file", "read_fil"));
        assert!(name_matches("*", ""));
        assert!(name_matches("*", "anything/with/slashes"));
        assert!(name_matches("read_*", "read_file"));
        assert!(name_matches("*_file", "read_file"));
        assert!(name_matches("*_*", "a_b"));
        assert!(!name_matches("*_*", "ab"));
        assert!(name_matches("a*b*c", "abc"));
        assert!(name_matches("a*b*c", "aXbYbZc"));
        assert!(!name_matches("a*b*c", "aXbYcZ"));
        assert!(name_matches("**", "x"));
        assert!(name_matches("é*ü", "éaü"));
        assert!(!name_matches("", "a"));
        assert!(name_matches("", ""));
        // Pathological input stays fast (no exponential backtracking).
        let name = "a".repeat(5000);
        assert!(!name_matches(&format!("{}b", "a*".repeat(50)), &name));
    }

    #[test]
    fn long_inputs_are_fast() {
        let text = format!("file:///{}", "a/".repeat(5000));
        let p = pat(&format!("file:///{}b", "**/".repeat(40)));
        assert!(p.matches(&format!("{text}b")));
        assert!(!p.matches(&format!("{text}c")));
        let q = pat(&format!("file:///{}b", "*a*/".repeat(40)));
        let r = pat(&format!("file:///{}/b", "**/a".repeat(40)));
        let w = q.overlap(&r).unwrap();
        assert!(q.matches(&w) && r.matches(&w));
        assert!(pat(&"*a".repeat(100)).overlaps(&pat(&"a*".repeat(100))));
        // Larger than the inline state buffer.
        let big = pat(&format!("{}/**", "x*".repeat(600)));
        assert!(big.matches(&format!("{}/y/z", "x".repeat(700))));
        assert!(!big.matches(&format!("{}/y/z", "x".repeat(599))));
        assert!(!big.matches(&"x".repeat(700)));
    }

    /// Regression (issue 10): 30,000 `**/` segments overflowed the stack in the
    /// epsilon closure; every operation must now run in constant stack depth.
    #[test]
    fn very_long_double_star_chains_do_not_recurse() {
        let p = pat(&format!("file:///{}x", "**/".repeat(30_000)));
        assert!(p.matches("file:///a/b/x"));
        assert!(!p.matches("file:///a/b/y"));
        let q = pat("file:///srv/**");
        let mut b = Budget::new(1_000_000);
        assert_eq!(
            p.try_overlap(&q, &mut b).unwrap().as_deref(),
            Some("file:///srv/x")
        );
        // Inclusion over such a pattern is out of any sane budget: it says so.
        let mut small = Budget::new(10_000);
        assert_eq!(
            p.try_includes_intersection(&q, &pat("file:///**/x"), &mut small),
            Err(OverBudget)
        );
        assert_eq!(small.left(), 0);
    }

    #[test]
    fn budgets_are_charged_and_fail_closed() {
        let a = pat(&format!("file:///{}b", "*a*/".repeat(40)));
        let c = pat(&format!("file:///{}/b", "**/a".repeat(40)));
        let mut b = Budget::new(u64::MAX / 2);
        assert!(a.try_overlap(&c, &mut b).unwrap().is_some());
        let used = u64::MAX / 2 - b.left();
        assert!(used > 40, "the search was charged: {used}");
        // The same comparison with one step less than it needs fails.
        let mut short = Budget::new(used - 1);
        assert_eq!(a.try_overlap(&c, &mut short), Err(OverBudget));
        let mut exact = Budget::new(used);
        assert!(a.try_overlap(&c, &mut exact).unwrap().is_some());
        // Literal comparisons and cheap prefix/suffix rejections cost nothing.
        let mut zero = Budget::new(0);
        assert_eq!(
            pat("file:///a").try_overlap(&pat("file:///**"), &mut zero),
            Ok(Some("file:///a".into()))
        );
        assert_eq!(
            pat("file:///a/*").try_overlap(&pat("s3://*"), &mut zero),
            Ok(None)
        );
        assert_eq!(Budget::new(3).spend(4), Err(OverBudget));
        assert!(!OverBudget.to_string().is_empty());
    }

    // ---- independent reference matcher and brute-force checks ----

    /// Translates a glob to an anchored `regex` regex, straight from the
    /// textual definition of the language (independent of the NFA).
    fn to_regex(glob: &str) -> Regex {
        let chars: Vec<char> = glob.chars().collect();
        let mut re = String::from("(?s)^");
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '*' {
                re.push_str(&regex::escape(&chars[i].to_string()));
                i += 1;
            } else if chars.get(i + 1) == Some(&'*') {
                let whole_segment = i == 0 || chars[i - 1] == '/';
                if whole_segment && chars.get(i + 2) == Some(&'/') {
                    re.push_str("(?:.*/)?");
                    i += 3;
                } else {
                    re.push_str(".*");
                    i += 2;
                }
            } else {
                re.push_str("[^/]*");
                i += 1;
            }
        }
        re.push('$');
        Regex::new(&re).unwrap()
    }

    /// All strings over {a, b, /} of length 0..=6.
    fn universe() -> &'static [String] {
        static U: OnceLock<Vec<String>> = OnceLock::new();
        U.get_or_init(|| {
            let mut all = vec![String::new()];
            let mut layer = vec![String::new()];
            for _ in 0..6 {
                layer = layer
                    .iter()
                    .flat_map(|s| ['a', 'b', '/'].map(|c| format!("{s}{c}")))
                    .collect();
                all.extend(layer.iter().cloned());
            }
            all
        })
    }

    /// Which universe strings a glob matches, per the reference regex.
    fn reference_set(re: &Regex) -> Vec<bool> {
        universe().iter().map(|s| re.is_match(s)).collect()
    }

    struct Case {
        pattern: UriPattern,
        re: Regex,
        set: Vec<bool>,
    }

    fn case(glob: &str) -> Case {
        let re = to_regex(glob);
        let set = reference_set(&re);
        Case {
            pattern: pat(glob),
            re,
            set,
        }
    }

    fn check_pair(x: &Case, y: &Case) -> Result<(), String> {
        let (a, b) = (x.pattern.as_str(), y.pattern.as_str());
        let common = universe()
            .iter()
            .zip(x.set.iter().zip(&y.set))
            .find(|(_, (p, q))| **p && **q)
            .map(|(s, _)| s);
        match (x.pattern.overlap(&y.pattern), common) {
            (Some(w), _) if !(x.re.is_match(&w) && y.re.is_match(&w)) => {
                Err(format!("{a:?} vs {b:?}: bad witness {w:?}"))
            }
            (None, Some(s)) => Err(format!("{a:?} vs {b:?}: missed common {s:?}")),
            _ => Ok(()),
        }
    }

    fn check_matches(x: &Case) -> Result<(), String> {
        for (s, &want) in universe().iter().zip(&x.set) {
            if x.pattern.matches(s) != want {
                return Err(format!("{:?} on {s:?}: expected {want}", x.pattern));
            }
        }
        Ok(())
    }

    const TOKENS: [&str; 5] = ["a", "b", "/", "*", "**"];

    /// Every valid pattern of 1..=`max_tokens` tokens, deduplicated.
    fn small_cases(max_tokens: usize) -> Vec<Case> {
        let mut globs = Vec::new();
        let mut layer = vec![String::new()];
        for _ in 0..max_tokens {
            layer = layer
                .iter()
                .flat_map(|s| TOKENS.map(|t| format!("{s}{t}")))
                .collect();
            globs.extend(layer.iter().cloned());
        }
        globs.sort();
        globs.dedup();
        globs.retain(|g| validate_glob(g).is_ok());
        globs.iter().map(|g| case(g)).collect()
    }

    /// Every valid pattern of 1..=3 tokens, checked pairwise exhaustively.
    #[test]
    fn exhaustive_small_patterns_against_reference() {
        let cases = small_cases(3);
        for x in &cases {
            check_matches(x).unwrap();
        }
        for (k, x) in cases.iter().enumerate() {
            for y in &cases[k..] {
                check_pair(x, y).unwrap();
            }
        }
    }

    /// Checks `s ⊇ a ∩ b` (or `s ⊇ a` without `b`) against the universe:
    /// a "yes" must have no enumerated counterexample; a "no" must come with
    /// a counterexample the reference regexes confirm, no longer than the
    /// shortest enumerated one (the search is breadth-first).
    fn check_inclusion(s: &Case, a: &Case, b: Option<&Case>) -> Result<(), String> {
        let label = format!(
            "{:?} ⊇ {:?} ∩ {:?}",
            s.pattern.as_str(),
            a.pattern.as_str(),
            b.map(|b| b.pattern.as_str())
        );
        let reference = universe()
            .iter()
            .enumerate()
            .find(|&(k, _)| a.set[k] && b.is_none_or(|b| b.set[k]) && !s.set[k])
            .map(|(_, w)| w);
        let got = s
            .pattern
            .inclusion_counterexample(&a.pattern, b.map(|b| &b.pattern), &mut Budget::unlimited())
            .unwrap();
        let public = match b {
            Some(b) => s.pattern.includes_intersection(&a.pattern, &b.pattern),
            None => s.pattern.includes(&a.pattern),
        };
        if public != got.is_none() {
            return Err(format!("{label}: public answer {public} vs {got:?}"));
        }
        match (got, reference) {
            (None, Some(w)) => Err(format!("{label}: missed counterexample {w:?}")),
            (Some(w), _)
                if !a.re.is_match(&w)
                    || b.is_some_and(|b| !b.re.is_match(&w))
                    || s.re.is_match(&w) =>
            {
                Err(format!("{label}: bad counterexample {w:?}"))
            }
            (Some(w), Some(r)) if w.chars().count() > r.len() => {
                Err(format!("{label}: counterexample {w:?} longer than {r:?}"))
            }
            _ => Ok(()),
        }
    }

    #[test]
    fn inclusion_examples() {
        let incl = |s: &str, o: &str| pat(s).includes(&pat(o));
        assert!(incl("file:///a/**", "file:///a/*"));
        assert!(incl("file:///a/**", "file:///a/b/c"));
        assert!(incl("file:///a/**", "file:///a/**/x.env"));
        assert!(!incl("file:///a/**", "file:///a**"));
        assert!(incl("/a/**/b", "/a/*/b"));
        assert!(!incl("/a/*/b", "/a/**/b"));
        assert!(incl("**/b", "/**/b"));
        assert!(incl("**", "*"));
        assert!(!incl("*", "**"));
        assert!(incl("x", "x"));
        assert!(!incl("x", "y"));
        assert!(incl(
            "https://*.example.com/**",
            "https://api.example.com/v1/x"
        ));
        assert!(!incl(
            "https://*.example.com/**",
            "https://a.b.example.com**"
        ));

        let cx = |s: &str, a: &str, b: Option<&str>| {
            let b = b.map(pat);
            pat(s)
                .inclusion_counterexample(&pat(a), b.as_ref(), &mut Budget::unlimited())
                .unwrap()
        };
        assert_eq!(cx("/a/*/b", "/a/**/b", None).as_deref(), Some("/a/b"));
        assert_eq!(cx("*", "**", None).as_deref(), Some("/"));
        assert_eq!(cx("a*", "a**", None).as_deref(), Some("a/"));

        let meet = |s: &str, a: &str, b: &str| pat(s).includes_intersection(&pat(a), &pat(b));
        assert!(meet("file:///a/*.env", "file:///a/*", "**.env"));
        assert!(!meet("file:///a/*.env", "file:///a/**", "**.env"));
        assert!(meet("file:///a/**/secret", "file:///a/**", "**/secret"));
        assert!(!meet("file:///a/*/secret", "file:///a/**", "**/secret"));
        // Disjoint: vacuously true.
        assert!(meet("z", "x*", "y*"));
        // Literal on one side: the intersection is that literal or nothing.
        assert!(meet("file:///a/b", "file:///a/*", "file:///a/b"));
        assert!(!meet("file:///a/c", "file:///a/*", "file:///a/b"));
        assert!(meet("file:///a/c", "file:///b/*", "file:///a/b"));
        assert_eq!(
            cx("file:///a/*.env", "file:///a/**", Some("**.env")).as_deref(),
            Some("file:///a//.env")
        );
        // Characters outside every pattern are covered by a representative.
        assert_eq!(cx("**a**", "**", Some("**b")).as_deref(), Some("b"));
        assert_eq!(cx("*a*", "*", None).as_deref(), Some(""));
        assert_eq!(cx("**/", "*", None).as_deref(), Some("x"));
        assert_eq!(cx("*/*", "**", Some("*")).as_deref(), Some(""));
        assert_eq!(cx("*", "xyz*", Some("*xy")), None);
    }

    #[test]
    fn inclusion_is_fast_on_long_patterns() {
        let s = pat(&format!("file:///{}b", "*a*/".repeat(30)));
        let o = pat(&format!("file:///{}b", "a/".repeat(30)));
        assert!(s.includes(&o));
        assert!(!o.includes(&s));
        let t = pat(&format!("file:///{}**", "**a**/".repeat(30)));
        assert!(t.includes(&s));
        assert!(!s.includes(&t));
        let many = pat(&"*a".repeat(40));
        assert!(pat(&"*a".repeat(20)).includes(&many));
        assert!(!many.includes(&pat(&"*a".repeat(20))));
        assert!(pat("**").includes(&many));
        // 2^20 subsets of `deep` are reachable; antichain pruning skips them.
        let deep = pat(&format!("**a{}", "*/".repeat(20)));
        let twice = pat(&format!("**a*/**a{}", "*/".repeat(20)));
        assert!(deep.includes(&twice));
        assert!(!twice.includes(&deep));
    }

    /// All ordered pairs of patterns of 1..=3 tokens for `includes`, all
    /// triples of 1..=2 tokens for `includes_intersection`.
    #[test]
    fn inclusion_exhaustive_against_reference() {
        let cases = small_cases(3);
        for s in &cases {
            for a in &cases {
                check_inclusion(s, a, None).unwrap();
            }
        }
        let cases = small_cases(2);
        for s in &cases {
            for a in &cases {
                for b in &cases {
                    check_inclusion(s, a, Some(b)).unwrap();
                }
            }
        }
    }

    fn glob_strategy() -> impl Strategy<Value = String> {
        prop::collection::vec(prop::sample::select(TOKENS.to_vec()), 1..=5)
            .prop_map(|tokens| tokens.concat())
            .prop_filter("valid glob", |g| validate_glob(g).is_ok())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(160))]

        #[test]
        fn overlap_and_matches_agree_with_reference(a in glob_strategy(), b in glob_strategy()) {
            let (x, y) = (case(&a), case(&b));
            prop_assert!(check_matches(&x).is_ok(), "{:?}", check_matches(&x));
            prop_assert!(check_pair(&x, &y).is_ok(), "{:?}", check_pair(&x, &y));
            prop_assert!(check_pair(&y, &x).is_ok(), "{:?}", check_pair(&y, &x));
        }

        #[test]
        fn name_matches_agrees_with_regex(p in "[ab*]{0,6}", n in "[ab]{0,8}") {
            let re = format!("^{}$", p.replace('*', ".*"));
            prop_assert_eq!(name_matches(&p, &n), Regex::new(&re).unwrap().is_match(&n));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        #[test]
        fn inclusion_agrees_with_reference(
            s in glob_strategy(),
            a in glob_strategy(),
            b in glob_strategy(),
        ) {
            let (s, a, b) = (case(&s), case(&a), case(&b));
            for (x, y) in [(&a, &b), (&b, &a)] {
                let r = check_inclusion(&s, x, Some(y));
                prop_assert!(r.is_ok(), "{:?}", r);
            }
            for x in [&a, &b] {
                let r = check_inclusion(&s, x, None);
                prop_assert!(r.is_ok(), "{:?}", r);
            }
        }
    }
}
