//! What validation reads of a tool's input schema at every call — the JSON types each place
//! of the input may take, the schemas of an object's properties and an array's items, a
//! string's length limit — read once, when the tool enters the registry. Looked up in the
//! schema itself, each of these is a hashed lookup in a map of maps, several per call.
//!
//! Only the keywords coercion and the length check read (`type`, `properties`, `items`,
//! `maxLength`); everything else is the compiled validator's business.

use serde_json::Value;

/// How deep a schema is read: as deep as serde_json reads a line (its nesting limit), so an
/// input read from a line is coerced as deep as it goes; a schema nested deeper than that is
/// not read further.
const MAX_DEPTH: usize = 128;

/// One place of a schema, as validation reads it.
#[derive(Debug, Default)]
pub(crate) struct InputShape {
    /// The JSON types its `type` names.
    pub types: Types,
    /// Its `properties`, sorted by name (empty unless `properties` is an object).
    properties: Box<[(String, InputShape)]>,
    /// Its `items`, when that is an object.
    pub items: Option<Box<InputShape>>,
    /// Its `maxLength`, when that is a non-negative integer.
    pub max_length: Option<u64>,
}

impl InputShape {
    /// Reads `schema`.
    pub(crate) fn of(schema: &Value) -> Self {
        Self::read(schema, 0)
    }

    fn read(schema: &Value, depth: usize) -> Self {
        if depth >= MAX_DEPTH {
            return Self::default();
        }
        let mut properties: Vec<(String, InputShape)> = (schema.get("properties"))
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, s)| (name.clone(), Self::read(s, depth + 1)))
                    .collect()
            })
            .unwrap_or_default();
        properties.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Self {
            types: Types::of(schema.get("type")),
            properties: properties.into_boxed_slice(),
            items: (schema.get("items"))
                .filter(|s| s.is_object())
                .map(|s| Box::new(Self::read(s, depth + 1))),
            max_length: schema.get("maxLength").and_then(Value::as_u64),
        }
    }

    /// The schema of property `name`, if `properties` names it.
    pub(crate) fn property(&self, name: &str) -> Option<&InputShape> {
        (self
            .properties
            .binary_search_by(|(n, _)| n.as_str().cmp(name)))
        .ok()
        .map(|i| &self.properties[i].1)
    }

    /// Whether `properties` names any property.
    pub(crate) fn has_properties(&self) -> bool {
        !self.properties.is_empty()
    }
}

/// The JSON types a schema's `type` names (a name or a list of names; anything else names
/// none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Types {
    pub string: bool,
    pub integer: bool,
    pub number: bool,
    pub boolean: bool,
    pub object: bool,
    pub array: bool,
}

impl Types {
    fn of(type_: Option<&Value>) -> Self {
        let mut types = Self::default();
        let mut set = |t: &str| match t {
            "string" => types.string = true,
            "integer" => types.integer = true,
            "number" => types.number = true,
            "boolean" => types.boolean = true,
            "object" => types.object = true,
            "array" => types.array = true,
            _ => {}
        };
        match type_ {
            Some(Value::String(t)) => set(t),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).for_each(set),
            _ => {}
        }
        types
    }

    /// Whether `v` is of one of the types.
    pub(crate) fn accepts(&self, v: &Value) -> bool {
        match v {
            Value::String(_) => self.string,
            Value::Bool(_) => self.boolean,
            Value::Number(n) => self.number || (self.integer && (n.is_i64() || n.is_u64())),
            Value::Object(_) => self.object,
            Value::Array(_) => self.array,
            Value::Null => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_keywords_validation_uses() {
        let shape = InputShape::of(&json!({
            "type": "object",
            "properties": {
                "z": {"type": ["integer", "string"], "maxLength": 3},
                "a": {"type": "array", "items": {"type": "boolean"}},
                "m": {"type": "string", "maxLength": -1},
                "t": {"items": true, "properties": []}
            }
        }));
        assert!(shape.types.object && !shape.types.string);
        let z = shape.property("z").expect("z");
        assert_eq!(
            (z.types.integer, z.types.string, z.max_length),
            (true, true, Some(3))
        );
        let a = shape.property("a").expect("a");
        assert!(a.types.array && a.items.as_ref().expect("items").types.boolean);
        assert_eq!(shape.property("m").expect("m").max_length, None);
        let t = shape.property("t").expect("t");
        assert!(t.items.is_none() && !t.has_properties() && t.types == Types::default());
        assert!(shape.property("b").is_none() && shape.property("").is_none());
    }

    #[test]
    fn a_schema_deeper_than_any_input_is_read_only_as_deep_as_one() {
        let mut schema = json!({"type": "integer"});
        for _ in 0..(MAX_DEPTH + 10) {
            schema = json!({"type": "object", "properties": {"x": schema}});
        }
        let mut shape = &InputShape::of(&schema);
        let mut depth = 0;
        while let Some(next) = shape.property("x") {
            shape = next;
            depth += 1;
        }
        assert_eq!(depth, MAX_DEPTH);
        assert_eq!(shape.types, Types::default());
    }
}
