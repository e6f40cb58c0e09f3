//! The seam between the live index and its readers (the webhook and the operator's MCP
//! listener): the index sends every change it makes to its engine down a
//! channel ([`Feed`]), and a [`Mirror`] applies them to an engine of its own. Readers
//! lock the mirror, never the index: a slow review cannot delay the controller, and a
//! what-if may change the mirror (a scratch copy) as long as it puts it back before
//! unlocking. Costs a second compiled engine in memory.

use crate::questions::Published;
use mcpgov_engine::{Engine, EngineConfig, Kind, ObjKey, Object};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::mpsc;

pub enum Change {
    Apply(Box<Object>),
    Delete(Kind, ObjKey),
    /// Whether a Policy asks for `admission: Enforce`.
    Enforce(ObjKey, bool),
    /// The bundle ConfigMap name of an Agent (set, or the default): the engine's Agent
    /// does not carry it, and two Agents of a namespace must not share one.
    BundleName(ObjKey, String),
}

/// Published bundles by agent (read by the MCP listener's `bundle_identity`).
pub type Bundles = Arc<RwLock<BTreeMap<ObjKey, Published>>>;

/// The index's end: sending never blocks the controller.
#[derive(Clone, Debug)]
pub struct Feed(mpsc::UnboundedSender<Change>, Bundles);

impl Feed {
    pub fn apply(&self, o: &Object) {
        let _ = self.0.send(Change::Apply(Box::new(o.clone())));
    }
    pub fn delete(&self, kind: Kind, key: &ObjKey) {
        let _ = self.0.send(Change::Delete(kind, key.clone()));
    }
    pub fn enforce(&self, policy: &ObjKey, on: bool) {
        let _ = self.0.send(Change::Enforce(policy.clone(), on));
    }
    /// A bundle ConfigMap the index holds now (`Some`) or no more (`None`); the
    /// engine does not see bundles, so this skips the channel.
    pub fn bundle(&self, agent: ObjKey, published: Option<Published>) {
        let mut b = self.1.write().unwrap_or_else(|e| e.into_inner());
        match published {
            Some(p) => b.insert(agent, p),
            None => b.remove(&agent),
        };
    }

    pub fn bundle_name(&self, agent: &ObjKey, name: &str) {
        let _ = self
            .0
            .send(Change::BundleName(agent.clone(), name.to_string()));
    }
}

pub struct State {
    pub engine: Engine,
    /// Policies with `admission: Enforce`.
    pub enforced: BTreeSet<ObjKey>,
    /// Each Agent's bundle ConfigMap name.
    pub bundle_names: BTreeMap<ObjKey, String>,
}

impl State {
    pub fn new(engine: Engine) -> State {
        State {
            engine,
            enforced: BTreeSet::new(),
            bundle_names: BTreeMap::new(),
        }
    }
}

/// The readers' end.
#[derive(Clone)]
pub struct Mirror {
    pub state: Arc<Mutex<State>>,
    /// The index has listed every watched kind (the mirror is then complete).
    pub ready: Arc<AtomicBool>,
    pub bundles: Bundles,
}

impl Mirror {
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }
}

/// A feed for the index and the mirror it keeps, applied by a task of its own.
pub fn spawn(config: EngineConfig, ready: Arc<AtomicBool>) -> (Feed, Mirror) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mirror = Mirror {
        state: Arc::new(Mutex::new(State::new(Engine::new(config)))),
        ready,
        bundles: Bundles::default(),
    };
    let state = mirror.state.clone();
    tokio::spawn(async move {
        let mut batch = Vec::new();
        while rx.recv_many(&mut batch, 256).await > 0 {
            let state = state.clone();
            let changes = std::mem::take(&mut batch);
            // Compiling may take a while on a large change: off the async threads.
            let _ = tokio::task::spawn_blocking(move || {
                let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
                for c in changes {
                    apply(&mut s, c);
                }
            })
            .await;
        }
    });
    (Feed(tx, mirror.bundles.clone()), mirror)
}

pub fn apply(s: &mut State, c: Change) {
    match c {
        Change::Apply(o) => {
            s.engine.apply(*o);
        }
        Change::Delete(kind, key) => {
            match kind {
                Kind::Policy => {
                    s.enforced.remove(&key);
                }
                Kind::Agent => {
                    s.bundle_names.remove(&key);
                }
                Kind::MCPServer | Kind::Grant => {}
            }
            s.engine.delete(kind, &key);
        }
        Change::Enforce(key, true) => {
            s.enforced.insert(key);
        }
        Change::Enforce(key, false) => {
            s.enforced.remove(&key);
        }
        Change::BundleName(agent, name) => {
            s.bundle_names.insert(agent, name);
        }
    }
}
