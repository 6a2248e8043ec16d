//! OpenAI's strict mode ("Structured Outputs" for function calls): the model's arguments are
//! decoded against the schema, so the schema must sit inside the subset the API compiles.
//!
//! The rules applied here: every object lists its `properties`, says `additionalProperties:
//! false` and requires every property — an optional property becomes required and nullable
//! (the model sends `null` for "absent"; toolrt drops such a `null` again when the call comes
//! in, [`drop_absent_nulls`]). Keywords the API does not take are dropped when they only
//! narrow what is valid (`maxLength`, `minLength`, `default`, …: toolrt's own schema check
//! still enforces them on every call), and a schema using a keyword that changes what is
//! valid in a way strict mode cannot express (`oneOf`, `allOf`, `not`, `if`, a map-like
//! object, …) is not made strict at all: [`strict_schema`] says why.

use serde_json::{Map, Value};

/// Deepest object nesting the API accepts in a strict schema.
const MAX_DEPTH: usize = 10;
/// Most properties the API accepts in one strict schema.
const MAX_PROPERTIES: usize = 5000;
/// Most values of one `enum` the API accepts.
const MAX_ENUM: usize = 1000;

/// Keywords kept as they are (beside `properties`, `items`, `anyOf`, `$defs`, walked below).
const KEPT: &[&str] = &[
    "type",
    "description",
    "enum",
    "const",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minItems",
    "maxItems",
    "$ref",
];

/// Keywords dropped: annotations, and constraints toolrt's own schema check enforces anyway.
const DROPPED: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "title",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "minLength",
    "maxLength",
    "uniqueItems",
    "contentEncoding",
    "contentMediaType",
];

/// String formats the API accepts; any other `format` is dropped.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// `schema` made strict-mode compatible, or why it cannot be.
pub(crate) fn strict_schema(schema: &Value) -> Result<Value, String> {
    let Some(root) = schema.as_object() else {
        return Err("the input schema is not an object".into());
    };
    if root.get("type") != Some(&Value::from("object")) {
        return Err("strict mode needs a top-level `\"type\": \"object\"`".into());
    }
    let mut walk = Walk { properties: 0 };
    let mut out = walk.node(schema, "input", 0)?;
    if let (Some(defs), Value::Object(out)) =
        (root.get("$defs").or(root.get("definitions")), &mut out)
    {
        let Some(defs) = defs.as_object() else {
            return Err("`$defs` is not an object".into());
        };
        let mut strict_defs = Map::new();
        for (name, def) in defs {
            strict_defs.insert(name.clone(), walk.node(def, &format!("$defs.{name}"), 1)?);
        }
        let key = if root.contains_key("$defs") {
            "$defs"
        } else {
            "definitions"
        };
        out.insert(key.into(), Value::Object(strict_defs));
    }
    Ok(out)
}

struct Walk {
    properties: usize,
}

impl Walk {
    /// One schema node, made strict; `at` names it for the reason when it cannot be.
    fn node(&mut self, schema: &Value, at: &str, depth: usize) -> Result<Value, String> {
        let Some(obj) = schema.as_object() else {
            return Err(format!(
                "{at}: a schema that is `{schema}` rather than an object"
            ));
        };
        if depth > MAX_DEPTH {
            return Err(format!(
                "{at}: nested deeper than the {MAX_DEPTH} levels strict mode takes"
            ));
        }
        let mut out = Map::new();
        for (key, value) in obj {
            match key.as_str() {
                "properties" | "required" | "additionalProperties" => {}
                "$defs" | "definitions" if depth == 0 => {}
                "$defs" | "definitions" => {
                    return Err(format!("{at}: `{key}` below the top level"));
                }
                "items" => {
                    out.insert(
                        key.clone(),
                        self.node(value, &format!("{at}[]"), depth + 1)?,
                    );
                }
                "anyOf" => {
                    let Some(branches) = value.as_array() else {
                        return Err(format!("{at}: `anyOf` is not an array"));
                    };
                    let mut strict = Vec::with_capacity(branches.len());
                    for (i, branch) in branches.iter().enumerate() {
                        strict.push(self.node(branch, &format!("{at}.anyOf[{i}]"), depth + 1)?);
                    }
                    out.insert(key.clone(), Value::Array(strict));
                }
                "enum" if value.as_array().is_some_and(|v| v.len() > MAX_ENUM) => {
                    return Err(format!("{at}: an enum of more than {MAX_ENUM} values"));
                }
                "format" => {
                    if value.as_str().is_some_and(|f| FORMATS.contains(&f)) {
                        out.insert(key.clone(), value.clone());
                    }
                }
                k if KEPT.contains(&k) => {
                    out.insert(key.clone(), value.clone());
                }
                k if DROPPED.contains(&k) => {}
                other => {
                    return Err(format!(
                        "{at}: `{other}` is not a keyword strict mode takes, and dropping it would accept inputs the tool refuses"
                    ));
                }
            }
        }
        let is_object = match obj.get("type") {
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
            _ => obj.contains_key("properties"),
        };
        if is_object {
            self.object(obj, &mut out, at, depth)?;
        }
        Ok(Value::Object(out))
    }

    /// The object keywords of a node: every property required, the optional ones nullable, no
    /// other property allowed.
    fn object(
        &mut self,
        obj: &Map<String, Value>,
        out: &mut Map<String, Value>,
        at: &str,
        depth: usize,
    ) -> Result<(), String> {
        match obj.get("additionalProperties") {
            None | Some(Value::Bool(false)) => {}
            Some(_) if !obj.contains_key("properties") => {
                return Err(format!(
                    "{at}: an object with arbitrary keys (a map), which strict mode cannot express"
                ));
            }
            Some(Value::Bool(true)) => {
                return Err(format!(
                    "{at}: allows properties it does not list (`additionalProperties: true`)"
                ));
            }
            Some(_) => {
                return Err(format!(
                    "{at}: `additionalProperties` is a schema, which strict mode cannot express"
                ));
            }
        }
        let props = match obj.get("properties") {
            Some(Value::Object(p)) => p.clone(),
            Some(_) => return Err(format!("{at}: `properties` is not an object")),
            None if depth == 0 => Map::new(),
            None => {
                return Err(format!(
                    "{at}: an object without `properties` (any keys), which strict mode cannot express"
                ));
            }
        };
        let required: Vec<&str> = match obj.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        self.properties += props.len();
        if self.properties > MAX_PROPERTIES {
            return Err(format!("more than {MAX_PROPERTIES} properties in all"));
        }
        let mut strict_props = Map::new();
        for (name, prop) in &props {
            let path = format!("{at}.{name}");
            let mut strict = self.node(prop, &path, depth + 1)?;
            if !required.contains(&name.as_str()) {
                strict = nullable(strict);
            }
            strict_props.insert(name.clone(), strict);
        }
        let names: Vec<Value> = props.keys().map(|k| Value::from(k.as_str())).collect();
        out.insert("properties".into(), Value::Object(strict_props));
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), Value::Bool(false));
        Ok(())
    }
}

/// `schema` that also accepts `null`: its `type` gains `"null"` (and its `enum` a `null`), or
/// it becomes one branch of an `anyOf` beside `{"type": "null"}`.
fn nullable(schema: Value) -> Value {
    let Value::Object(mut obj) = schema else {
        return schema;
    };
    if accepts_null(&obj) {
        return Value::Object(obj);
    }
    let simple =
        !obj.contains_key("anyOf") && !obj.contains_key("$ref") && !obj.contains_key("const");
    match obj.get_mut("type") {
        Some(Value::String(t)) if simple => {
            let t = std::mem::take(t);
            obj.insert("type".into(), Value::from(vec![t, "null".to_string()]));
        }
        Some(Value::Array(types)) if simple => types.push(Value::from("null")),
        _ => {
            let description = obj.remove("description");
            let mut wrapper = Map::new();
            if let Some(d) = description {
                wrapper.insert("description".into(), d);
            }
            wrapper.insert(
                "anyOf".into(),
                Value::Array(vec![
                    Value::Object(obj),
                    serde_json::json!({"type": "null"}),
                ]),
            );
            return Value::Object(wrapper);
        }
    }
    if let Some(Value::Array(values)) = obj.get_mut("enum") {
        values.push(Value::Null);
    }
    Value::Object(obj)
}

/// Whether a schema node already accepts `null` by its `type`.
fn accepts_null(obj: &Map<String, Value>) -> bool {
    match obj.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => false,
    }
}

/// Removes, from `input`, every `null` the model sent for an optional property that does not
/// itself accept `null` (strict mode makes the model send `null` for "absent"), at any depth
/// the schema describes. Other `null`s stay, for the schema check to report.
pub fn drop_absent_nulls(input: &mut Value, schema: &Value) {
    match input {
        Value::Object(map) => {
            let Some(props) = schema.get("properties").and_then(Value::as_object) else {
                return;
            };
            let required = |name: &str| {
                schema
                    .get("required")
                    .and_then(Value::as_array)
                    .is_some_and(|r| r.iter().any(|n| n == name))
            };
            map.retain(|name, value| {
                !(value.is_null()
                    && !required(name)
                    && props
                        .get(name)
                        .and_then(Value::as_object)
                        .is_some_and(|p| !accepts_null(p)))
            });
            for (name, value) in map.iter_mut() {
                if let Some(prop) = props.get(name) {
                    drop_absent_nulls(value, prop);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for value in items {
                    drop_absent_nulls(value, item);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn made_strict() {
        let cases = [
            (
                "optional string becomes nullable, all required",
                json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 0}}, "required": ["a"]}),
                json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": ["integer", "null"], "minimum": 0}}, "required": ["a", "b"], "additionalProperties": false}),
            ),
            (
                "length limits and defaults dropped",
                json!({"type": "object", "properties": {"a": {"type": "string", "maxLength": 10, "default": "x", "description": "d"}}, "required": ["a"], "additionalProperties": false}),
                json!({"type": "object", "properties": {"a": {"type": "string", "description": "d"}}, "required": ["a"], "additionalProperties": false}),
            ),
            (
                "optional enum gains null",
                json!({"type": "object", "properties": {"m": {"type": "string", "enum": ["a", "b"]}}}),
                json!({"type": "object", "properties": {"m": {"type": ["string", "null"], "enum": ["a", "b", null]}}, "required": ["m"], "additionalProperties": false}),
            ),
            (
                "nested objects and arrays",
                json!({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}, "required": ["xs"]}),
                json!({"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": ["string", "null"]}}, "required": ["k"], "additionalProperties": false}}}, "required": ["xs"], "additionalProperties": false}),
            ),
            (
                "optional anyOf is wrapped",
                json!({"type": "object", "properties": {"v": {"description": "d", "anyOf": [{"type": "string"}, {"type": "integer"}]}}}),
                json!({"type": "object", "properties": {"v": {"description": "d", "anyOf": [{"anyOf": [{"type": "string"}, {"type": "integer"}]}, {"type": "null"}]}}, "required": ["v"], "additionalProperties": false}),
            ),
            (
                "an unknown format is dropped, a known one kept",
                json!({"type": "object", "properties": {"u": {"type": "string", "format": "uri"}, "d": {"type": "string", "format": "date"}}, "required": ["u", "d"]}),
                json!({"type": "object", "properties": {"u": {"type": "string"}, "d": {"type": "string", "format": "date"}}, "required": ["u", "d"], "additionalProperties": false}),
            ),
            (
                "no properties at the top",
                json!({"type": "object"}),
                json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false}),
            ),
        ];
        for (what, schema, want) in cases {
            assert_eq!(strict_schema(&schema).as_ref(), Ok(&want), "{what}");
        }
    }

    #[test]
    fn not_made_strict() {
        let cases = [
            (
                json!({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}),
                "input.a: `oneOf`",
            ),
            (
                json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
                "input.m: an object with arbitrary keys",
            ),
            (
                json!({"type": "object", "properties": {"m": {"type": "object"}}}),
                "input.m: an object without `properties`",
            ),
            (
                json!({"type": "object", "additionalProperties": true, "properties": {}}),
                "input: allows properties",
            ),
            (json!({"type": "string"}), "top-level"),
            (json!({"type": "object", "allOf": []}), "`allOf`"),
        ];
        for (schema, want) in cases {
            let why = strict_schema(&schema).unwrap_err();
            assert!(why.contains(want), "{schema}: {why}");
        }
    }

    #[test]
    fn absent_nulls_are_dropped_and_others_kept() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "integer"}, "n": {"type": ["string", "null"]},
            "o": {"type": "object", "properties": {"x": {"type": "string"}}}}, "required": ["a"]});
        let mut input = json!({"a": null, "b": null, "n": null, "o": {"x": null}});
        drop_absent_nulls(&mut input, &schema);
        assert_eq!(input, json!({"a": null, "n": null, "o": {}}));
    }
}
