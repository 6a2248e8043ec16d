//! `Noop`: does nothing and succeeds. For benchmarks and tests of the pipeline itself; not part
//! of the default tool set.

use async_trait::async_trait;
use serde_json::{Value, json};

use crate::call::Input;
use crate::tool::{Tool, ToolContext, ToolOutput};

/// A tool that returns at once.
#[derive(Debug, Clone)]
pub struct Noop {
    name: String,
}

impl Noop {
    /// A no-op tool called `Noop`.
    pub fn new() -> Self {
        Self::named("Noop")
    }

    /// A no-op tool with another name (tests).
    pub fn named(name: &str) -> Self {
        Self {
            name: name.to_string(),
        }
    }
}

impl Default for Noop {
    fn default() -> Self {
        Self::new()
    }
}

#[async_trait]
impl Tool for Noop {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "Does nothing and succeeds."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {"value": {"type": "integer"}}, "additionalProperties": false})
    }

    fn is_concurrency_safe(&self, _input: &Input) -> bool {
        true
    }

    async fn call(&self, _input: Input, _ctx: ToolContext) -> ToolOutput {
        ToolOutput::success("ok")
    }
}
