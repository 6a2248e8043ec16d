//! Schema-guided coercion of what models commonly get almost right: numbers and booleans sent
//! as strings, objects and arrays sent as JSON-encoded strings, a single value where an array is
//! wanted. Anything else is left alone for schema validation to report.

use serde_json::{Map, Value};

use crate::input_shape::{InputShape, Types};

/// Coerces `value` in place toward the schema `shape` was read from.
pub(crate) fn coerce(value: &mut Value, shape: &InputShape) {
    let wants = shape.types;
    if let Value::String(s) = value {
        if let Some(new) = from_string(s, wants) {
            *value = new;
        }
    } else if let Value::Number(n) = value {
        // 5.0 where an integer is wanted is 5.
        if wants.integer
            && !wants.number
            && let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
            && n.as_i64().is_none()
            && n.as_u64().is_none()
        {
            *value = Value::from(f as i64);
        }
    }
    if wants.array && !value.is_array() && !value.is_null() && !wants.accepts(value) {
        let single = std::mem::take(value);
        *value = Value::Array(vec![single]);
    }
    match value {
        Value::Object(map) => coerce_object(map, shape),
        Value::Array(items) => {
            if let Some(item_shape) = &shape.items {
                for item in items {
                    coerce(item, item_shape);
                }
            }
        }
        _ => {}
    }
}

/// Coerces each property of `map` toward its property schema.
fn coerce_object(map: &mut Map<String, Value>, shape: &InputShape) {
    if !shape.has_properties() {
        return;
    }
    for (key, val) in map.iter_mut() {
        if let Some(prop_shape) = shape.property(key) {
            coerce(val, prop_shape);
        }
    }
}

fn from_string(s: &str, wants: Types) -> Option<Value> {
    if wants.string {
        return None;
    }
    let t = s.trim();
    if wants.integer
        && let Ok(i) = t.parse::<i64>()
    {
        return Some(Value::from(i));
    }
    if wants.number
        && let Ok(f) = t.parse::<f64>()
        && f.is_finite()
    {
        return serde_json::Number::from_f64(f).map(Value::Number);
    }
    if wants.boolean {
        match t {
            "true" => return Some(Value::Bool(true)),
            "false" => return Some(Value::Bool(false)),
            _ => {}
        }
    }
    if ((wants.object && t.starts_with('{')) || (wants.array && t.starts_with('[')))
        // As strict as a message: a repeated key leaves the string as it is (the schema then
        // refuses it), never a silently chosen value.
        && let Ok(v) = crate::protocol::json::from_str(t)
        && ((wants.object && v.is_object()) || (wants.array && v.is_array()))
    {
        return Some(v);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "x": {"type": "number"},
                "b": {"type": "boolean"},
                "s": {"type": "string"},
                "o": {"type": "object", "properties": {"k": {"type": "integer"}}},
                "a": {"type": "array", "items": {"type": "integer"}},
                "ns": {"type": ["integer", "string"]}
            }
        })
    }

    #[test]
    fn coercion_table() {
        for (input, want) in [
            (json!({"n": "42"}), json!({"n": 42})),
            (json!({"n": " 7 "}), json!({"n": 7})),
            (json!({"n": 5.0}), json!({"n": 5})),
            (json!({"n": "soon"}), json!({"n": "soon"})),
            (json!({"x": "2.5"}), json!({"x": 2.5})),
            (json!({"b": "true"}), json!({"b": true})),
            (json!({"b": "yes"}), json!({"b": "yes"})),
            (json!({"s": "12"}), json!({"s": "12"})),
            (json!({"s": 12}), json!({"s": 12})),
            (json!({"o": "{\"k\": \"3\"}"}), json!({"o": {"k": 3}})),
            (json!({"o": "[1]"}), json!({"o": "[1]"})),
            (json!({"a": "[1, \"2\"]"}), json!({"a": [1, 2]})),
            (json!({"a": 3}), json!({"a": [3]})),
            (json!({"a": "4"}), json!({"a": [4]})),
            (json!({"ns": "12"}), json!({"ns": "12"})),
            (json!({"unknown": "1"}), json!({"unknown": "1"})),
        ] {
            let mut v = input.clone();
            coerce(&mut v, &InputShape::of(&schema()));
            assert_eq!(v, want, "{input}");
        }
    }
}
