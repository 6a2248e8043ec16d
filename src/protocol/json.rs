//! Strict JSON for client input: a value in which no object repeats a key, at any depth, and
//! that is not made of absurdly many values.
//!
//! serde_json keeps the last of two equal keys. For a message that would let a second `command`
//! be smuggled past whoever looked at the first, so every client line is read through
//! [`from_str`] (or [`Seed`] inside a derived type), which refuses a repeated key and names it and
//! where it is. Building the value costs what serde_json's own `Value` costs: the check is the
//! result of the insert that happens anyway.

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Most JSON values (objects, arrays, strings, numbers, …) one message may hold. Each costs a few
/// dozen bytes in memory whatever its size on the line, so this bounds what a line of tiny
/// values (`[0,0,0,…]`) can cost.
pub(crate) const MAX_VALUES: usize = 1_000_000;

/// Parses one strict JSON value.
pub(crate) fn from_str(text: &str) -> Result<Value, serde_json::Error> {
    let count = Cell::new(0);
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Seed::new(&count, Where::Message).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Whether a parse error is a refusal of this module's (rather than bad JSON).
pub(crate) fn is_refusal(err: &serde_json::Error) -> bool {
    let text = err.to_string();
    text.starts_with(DUPLICATE) || text.starts_with(TOO_MANY)
}

const DUPLICATE: &str = "duplicate key";
const TOO_MANY: &str = "more than";

/// Where a value sits, for error messages; built on the stack, rendered only on error.
#[derive(Clone, Copy)]
pub(crate) enum Where<'a> {
    /// The message itself.
    Message,
    /// A field of the message.
    Field(&'static str),
    /// A key of an object.
    Key(&'a Where<'a>, &'a str),
    /// An element of an array.
    Index(&'a Where<'a>, usize),
}

impl fmt::Display for Where<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Where::Message => Ok(()),
            Where::Field(name) => f.write_str(name),
            Where::Key(parent, key) => {
                if !matches!(parent, Where::Message) {
                    write!(f, "{parent}.")?;
                }
                f.write_str(&short(key))
            }
            Where::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// A key as an error message shows it: at most 100 characters.
fn short(key: &str) -> String {
    if key.chars().count() <= 100 {
        key.to_string()
    } else {
        let cut: String = key.chars().take(97).collect();
        format!("{cut}...")
    }
}

/// Deserialises one strict value at `place`.
pub(crate) struct Seed<'a> {
    count: &'a Cell<usize>,
    place: Where<'a>,
}

impl<'a> Seed<'a> {
    /// A seed counting values in `count`, for a value at `place`.
    pub(crate) fn new(count: &'a Cell<usize>, place: Where<'a>) -> Self {
        Self { count, place }
    }

    fn one_more<E: de::Error>(&self) -> Result<(), E> {
        let n = self.count.get() + 1;
        if n > MAX_VALUES {
            return Err(E::custom(format_args!(
                "{TOO_MANY} {MAX_VALUES} JSON values in one message"
            )));
        }
        self.count.set(n);
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.one_more()?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.one_more()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.one_more()?;
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.one_more()?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.one_more()?;
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.one_more()?;
        Ok(Value::String(v))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.one_more()?;
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.visit_unit()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.one_more()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Seed {
            count: self.count,
            place: Where::Index(&self.place, items.len()),
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        self.one_more()?;
        let mut map = Map::new();
        while let Some(key) = access.next_key::<String>()? {
            let value = access.next_value_seed(Seed {
                count: self.count,
                place: Where::Key(&self.place, &key),
            })?;
            if map.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "{DUPLICATE} `{}`{}: a key may appear only once in an object",
                    short(&key),
                    match self.place {
                        Where::Message => String::new(),
                        place => format!(" in `{place}`"),
                    }
                )));
            }
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_refused_and_named_with_its_place() {
        for (text, needle) in [
            (r#"{"a":1,"a":2}"#, "duplicate key `a`: "),
            (
                r#"{"input":{"command":"ls","command":"rm -rf /"}}"#,
                "duplicate key `command` in `input`",
            ),
            (
                r#"{"calls":[{"id":"1"},{"id":"2","input":{"x":{"y":1,"y":2}}}]}"#,
                "duplicate key `y` in `calls[1].input.x`",
            ),
        ] {
            let err = from_str(text).unwrap_err();
            assert!(is_refusal(&err), "{text}: {err}");
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn the_same_value_as_serde_json_otherwise() {
        for text in [
            r#"{"a":[1,-2,3.5,true,null,"s\u00e9"],"b":{"c":{}},"d":[]}"#,
            r#"[{"a":1},{"a":1}]"#,
            "12345678901234567890",
            r#""x""#,
            r#"{"z":1,"a":2,"m":3}"#,
        ] {
            let ours = from_str(text).unwrap();
            let theirs: Value = serde_json::from_str(text).unwrap();
            assert_eq!(ours, theirs, "{text}");
            assert_eq!(ours.to_string(), theirs.to_string(), "key order: {text}");
        }
        assert!(from_str("{} x").is_err(), "trailing characters");
        assert!(!is_refusal(&from_str("{").unwrap_err()));
    }

    #[test]
    fn too_many_values_are_refused() {
        let text = format!("[{}0]", "0,".repeat(MAX_VALUES));
        let err = from_str(&text).unwrap_err();
        assert!(is_refusal(&err));
        assert!(
            err.to_string().contains("JSON values in one message"),
            "{err}"
        );
    }
}
