//! `mcpgov serve`: the governance questions as MCP tools, over stdio or streamable
//! HTTP. The tools are [`crate::questions::QUESTIONS`], listed from that one place;
//! each call deserialises its arguments, answers from the engine and returns the
//! answer as structured content (and as text, for clients that read only text).

mod http;
pub mod live;
pub mod tenancy;

pub use http::{MAX_REQUEST_BYTES, foreign_host_or_origin, listen};

use crate::questions::{self, GraphId, Question, Refusal, Snapshot, Visibility};
use mcpgov_engine::Engine;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use std::sync::Arc;

/// One loaded estate, shared by every session.
pub struct Estate {
    pub engine: Engine,
    pub graph: GraphId,
    /// The namespace of names given without one.
    pub namespace: String,
    /// A fixed evaluation instant (`--now`); otherwise each call judges expiries at
    /// the time it is asked.
    pub now: Option<jiff::Timestamp>,
}

impl Estate {
    pub fn new(engine: Engine, namespace: String, now: Option<jiff::Timestamp>) -> Estate {
        Estate {
            graph: GraphId::of_inputs(&engine, false),
            engine,
            namespace,
            now,
        }
    }

    /// Answer one question with the caller's visibility.
    pub fn answer(
        &self,
        q: &Question,
        vis: &Visibility,
        args: serde_json::Value,
    ) -> Result<serde_json::Value, Refusal> {
        let eval = self
            .engine
            .evaluator(self.now.unwrap_or_else(jiff::Timestamp::now));
        let s = Snapshot {
            eval: &eval,
            graph: self.graph.clone(),
            namespace: &self.namespace,
            published: None,
        };
        (q.answer)(&s, vis, args)
    }
}

/// What answers: files loaded once, or the operator's live index.
#[derive(Clone)]
enum Source {
    Offline(Arc<Estate>),
    Live(Arc<live::Live>),
}

/// The MCP face of an [`Estate`] or of the live index: tools only, every one read-only.
#[derive(Clone)]
pub struct Governance {
    source: Source,
    tools: Arc<Vec<Tool>>,
    /// `None`: each HTTP request carries its caller (the operator's listener).
    visibility: Option<Visibility>,
}

impl Governance {
    /// Offline: every caller reads everything.
    pub fn new(estate: Arc<Estate>) -> Governance {
        Governance {
            source: Source::Offline(estate),
            tools: Arc::new(tools()),
            visibility: Some(Visibility::All),
        }
    }

    /// The operator's listener: answers from the live index, each limited to what the
    /// caller the listener authenticated may read.
    pub fn live(live: Arc<live::Live>) -> Governance {
        Governance {
            source: Source::Live(live),
            tools: Arc::new(tools()),
            visibility: None,
        }
    }

    /// The visibility of this call: fixed, or the caller its HTTP request was
    /// authenticated as. No caller: no answer (fail closed).
    fn visibility(&self, context: &RequestContext<RoleServer>) -> Result<Visibility, ErrorData> {
        if let Some(v) = &self.visibility {
            return Ok(v.clone());
        }
        context
            .extensions
            .get::<axum::http::request::Parts>()
            .and_then(|p| p.extensions.get::<Arc<tenancy::Caller>>())
            .map(|c| c.visibility.clone())
            .ok_or_else(|| ErrorData::invalid_request("unauthenticated", None))
    }
}

/// The tool list: one entry per question, read-only, idempotent, closed-world.
pub fn tools() -> Vec<Tool> {
    questions::QUESTIONS
        .iter()
        .map(|q| {
            Tool::new(q.name, q.description, (q.input_schema)())
                .with_title(q.title)
                .with_raw_output_schema(Arc::new((q.output_schema)()))
                .with_annotations(
                    ToolAnnotations::with_title(q.title)
                        .read_only(true)
                        .destructive(false)
                        .idempotent(true)
                        .open_world(false),
                )
        })
        .collect()
}

impl ServerHandler for Governance {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("mcpgov", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Governance questions about which AI agents may call which MCP tools: \
                 check_access, explain, eligible_tools, unsafe_tools, blast_radius, drift, \
                 audit_report, bundle_identity. Every answer names the graph instance and \
                 generation that gave it.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(q) = questions::find(&request.name) else {
            // The protocol's answer to a tool that is not listed.
            return Err(ErrorData::invalid_params(
                format!("unknown tool {}", crate::text::quote(&request.name, 80)),
                None,
            ));
        };
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let vis = self.visibility(&context)?;
        let source = self.source.clone();
        // Answers are CPU work on a shared engine: off the async workers.
        let result = tokio::task::spawn_blocking(move || match source {
            Source::Offline(estate) => estate.answer(q, &vis, args),
            Source::Live(live) => live.answer(q, &vis, args),
        })
        .await
        .map_err(|e| ErrorData::internal_error(format!("the question failed: {e}"), None))?;
        Ok(match result {
            Ok(answer) => CallToolResult::structured(answer),
            Err(r) => CallToolResult::error(vec![ContentBlock::text(r.message().to_string())]),
        }
        .into())
    }
}

#[cfg(test)]
mod bench;
