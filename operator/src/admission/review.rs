//! AdmissionReview v1 as the API server sends and expects it: only the fields the
//! webhook reads or writes (unknown fields are ignored, the body is bounded before it
//! gets here).

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const API_VERSION: &str = "admission.k8s.io/v1";
pub const KIND: &str = "AdmissionReview";

#[derive(Debug, Deserialize)]
pub struct ReviewIn {
    #[serde(rename = "apiVersion", default)]
    pub api_version: String,
    #[serde(default)]
    pub kind: String,
    pub request: Option<Request>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Request {
    pub uid: String,
    #[serde(default)]
    pub kind: GroupVersionKind,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub operation: String,
    #[serde(default)]
    pub object: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
pub struct GroupVersionKind {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub version: String,
    #[serde(default)]
    pub kind: String,
}

#[derive(Debug, Serialize)]
pub struct ReviewOut {
    #[serde(rename = "apiVersion")]
    pub api_version: &'static str,
    pub kind: &'static str,
    pub response: Response,
}

#[derive(Debug, Default, Serialize)]
pub struct Response {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct Status {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
}

impl Response {
    pub fn allow(uid: String, warnings: Vec<String>) -> Self {
        Response {
            uid,
            allowed: true,
            status: None,
            warnings,
        }
    }

    /// Refused: `kubectl apply` prints `message` after "admission webhook … denied the
    /// request:".
    pub fn deny(uid: String, message: String, warnings: Vec<String>) -> Self {
        Response {
            uid,
            allowed: false,
            status: Some(Status {
                code: 422,
                reason: "Invalid",
                message,
            }),
            warnings,
        }
    }

    pub fn into_review(self) -> ReviewOut {
        ReviewOut {
            api_version: API_VERSION,
            kind: KIND,
            response: self,
        }
    }
}
