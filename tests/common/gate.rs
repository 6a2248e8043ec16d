//! `Gate`, a test tool that holds its call until the test releases it: shared by the admission
//! tests (`tests/admission_backpressure.rs`, `tests/agents_fair_admission.rs`).
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use toolrt::{Input, Tool, ToolContext, ToolOutput};

/// Waits for a permit of its semaphore, then succeeds.
pub struct Gate(pub Arc<Semaphore>);

#[async_trait]
impl Tool for Gate {
    fn name(&self) -> &str {
        "Gate"
    }
    fn description(&self) -> &str {
        "waits"
    }
    fn input_schema(&self) -> Value {
        json!({"type": "object", "additionalProperties": false})
    }
    async fn call(&self, _: Input, _: ToolContext) -> ToolOutput {
        if let Ok(p) = self.0.acquire().await {
            p.forget();
        }
        ToolOutput::success("released")
    }
}
