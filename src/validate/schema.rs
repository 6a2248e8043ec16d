//! Schema validation errors, phrased so a model can fix its call: every failing field path and
//! what was expected (`timeout: expected integer, got "soon"`; `colour: unexpected field`).

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::paths::LocationSegment;
use serde_json::Value;

use crate::input_shape::InputShape;
use crate::protocol::json_type;

/// Validates `instance` and returns one line per problem (empty when valid).
pub(crate) fn problems(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    if validator.is_valid(instance) {
        return Vec::new();
    }
    let mut lines = Vec::new();
    for err in validator.iter_errors(instance) {
        let path = dotted(err.instance_path().segments());
        let field = |name: &str| {
            let name = short(name);
            if path.is_empty() {
                name
            } else {
                format!("{path}.{name}")
            }
        };
        let here = if path.is_empty() {
            "input".to_string()
        } else {
            path.clone()
        };
        let got = describe(err.instance());
        match err.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                for name in unexpected {
                    lines.push(format!("{}: unexpected field", field(name)));
                }
            }
            ValidationErrorKind::Required { property } => {
                let name = property
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| property.to_string());
                lines.push(format!("{}: required field is missing", field(&name)));
            }
            ValidationErrorKind::Type { kind } => {
                let expected = match kind {
                    TypeKind::Single(t) => t.to_string(),
                    TypeKind::Multiple(set) => set
                        .iter()
                        .map(|t| t.to_string())
                        .collect::<Vec<_>>()
                        .join(" or "),
                };
                lines.push(format!("{here}: expected {expected}, got {got}"));
            }
            ValidationErrorKind::Enum { options } => {
                lines.push(format!("{here}: expected one of {options}, got {got}"))
            }
            ValidationErrorKind::Constant { expected_value } => {
                lines.push(format!("{here}: expected {expected_value}, got {got}"))
            }
            ValidationErrorKind::Minimum { limit } => {
                lines.push(format!("{here}: expected a number >= {limit}, got {got}"))
            }
            ValidationErrorKind::Maximum { limit } => {
                lines.push(format!("{here}: expected a number <= {limit}, got {got}"))
            }
            ValidationErrorKind::ExclusiveMinimum { limit } => {
                lines.push(format!("{here}: expected a number > {limit}, got {got}"))
            }
            ValidationErrorKind::ExclusiveMaximum { limit } => {
                lines.push(format!("{here}: expected a number < {limit}, got {got}"))
            }
            ValidationErrorKind::MinLength { limit } => lines.push(format!(
                "{here}: expected at least {limit} characters, got {got}"
            )),
            ValidationErrorKind::MaxLength { limit } => {
                lines.push(format!("{here}: expected at most {limit} characters"))
            }
            ValidationErrorKind::MinItems { limit } => {
                lines.push(format!("{here}: expected at least {limit} items"))
            }
            ValidationErrorKind::MaxItems { limit } => {
                lines.push(format!("{here}: expected at most {limit} items"))
            }
            _ => lines.push(format!("{here}: {err}")),
        }
    }
    lines
}

fn dotted<'a>(segments: impl Iterator<Item = LocationSegment<'a>>) -> String {
    let mut out = String::new();
    for seg in segments {
        match seg {
            LocationSegment::Property(p) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(&short(&p));
            }
            LocationSegment::Index(i) => {
                out.push_str(&format!("[{i}]"));
            }
        }
    }
    out
}

/// The top-level string fields of `input` longer than their schema's `maxLength` (in
/// characters), one line each. Cheap: a field is counted only when its bytes exceed the limit.
pub(crate) fn oversized(shape: &InputShape, input: &serde_json::Map<String, Value>) -> Vec<String> {
    let mut lines = Vec::new();
    if !shape.has_properties() {
        return lines;
    }
    for (key, value) in input {
        let Value::String(s) = value else {
            continue;
        };
        let Some(max) = shape.property(key).and_then(|p| p.max_length) else {
            continue;
        };
        if s.len() as u64 > max {
            let chars = s.chars().count() as u64;
            if chars > max {
                lines.push(format!(
                    "{}: expected at most {max} characters, got {chars}",
                    short(key)
                ));
            }
        }
    }
    lines
}

/// A field name as a message shows it: at most 100 characters.
fn short(name: &str) -> String {
    if name.chars().count() <= 100 {
        name.to_string()
    } else {
        let cut: String = name.chars().take(97).collect();
        format!("{cut}...")
    }
}

/// A short rendering of a value for error messages: strings quoted and cut, others by type.
fn describe(v: &Value) -> String {
    match v {
        Value::String(s) if s.chars().count() > 60 => {
            let cut: String = s.chars().take(57).collect();
            format!("{:?}", format!("{cut}..."))
        }
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => format!("{} {n}", json_type(v)),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Null => "null".into(),
        other => json_type(other).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_name_paths_and_expectations() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["command"],
            "properties": {
                "command": {"type": "string"},
                "timeout": {"type": "integer", "minimum": 0},
                "edits": {"type": "array", "items": {"type": "object", "properties": {"old": {"type": "string"}}}}
            }
        });
        let v = jsonschema::validator_for(&schema).unwrap();
        let p = problems(
            &v,
            &json!({"timeout": "soon", "colour": "red", "edits": [{"old": 3}]}),
        );
        assert!(
            p.contains(&"timeout: expected integer, got \"soon\"".to_string()),
            "{p:?}"
        );
        assert!(p.contains(&"colour: unexpected field".to_string()), "{p:?}");
        assert!(
            p.contains(&"command: required field is missing".to_string()),
            "{p:?}"
        );
        assert!(
            p.contains(&"edits[0].old: expected string, got integer 3".to_string()),
            "{p:?}"
        );
        assert!(problems(&v, &json!({"command": "ls"})).is_empty());
        let p = problems(&v, &json!({"command": "ls", "timeout": -1}));
        assert_eq!(
            p,
            vec!["timeout: expected a number >= 0, got integer -1".to_string()]
        );
    }
}
