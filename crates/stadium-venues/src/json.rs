//! Reading fields of a JSON plan: each reader records an issue at the field's path and
//! returns `None` when the field is absent or of the wrong type, so a parser goes on and
//! reports every problem of the document in order.

use serde_json::{Map, Value};

use crate::error::{ImportError, Issues, Problem};
use crate::plan::MAX_LABEL;

/// The bytes as one JSON document, or [`ImportError::Syntax`] with line and column.
pub(crate) fn document(bytes: &[u8]) -> Result<Value, ImportError> {
    serde_json::from_slice(bytes).map_err(|e| ImportError::Syntax {
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })
}

/// The value as an object, or `None` after recording a wrong-type issue at `place`.
pub(crate) fn object<'a>(
    value: &'a Value,
    place: &str,
    issues: &mut Issues,
) -> Option<&'a Map<String, Value>> {
    let found = value.as_object();
    if found.is_none() {
        issues.push(
            place,
            Problem::WrongType {
                expected: "an object",
            },
        );
    }
    found
}

/// The field, or `None` after recording a missing-field issue.
pub(crate) fn required<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    place: &str,
    issues: &mut Issues,
) -> Option<&'a Value> {
    match obj.get(key) {
        None | Some(Value::Null) => {
            issues.push(format!("{place}.{key}"), Problem::MissingField);
            None
        }
        Some(value) => Some(value),
    }
}

/// The value as an array, or `None` after recording a wrong-type issue at `place`.
pub(crate) fn array<'a>(
    value: &'a Value,
    place: &str,
    issues: &mut Issues,
) -> Option<&'a Vec<Value>> {
    let found = value.as_array();
    if found.is_none() {
        issues.push(
            place,
            Problem::WrongType {
                expected: "an array",
            },
        );
    }
    found
}

/// A label: a string, or a number written as its text (pretix and seats.io accept both).
pub(crate) fn label(value: &Value, place: &str, issues: &mut Issues) -> Option<String> {
    let text = match value {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        _ => {
            issues.push(
                place,
                Problem::WrongType {
                    expected: "a string",
                },
            );
            return None;
        }
    };
    if text.is_empty() || text.chars().count() > MAX_LABEL {
        issues.push(place, Problem::BadLength { max: MAX_LABEL });
        return None;
    }
    Some(text)
}

/// The finite number at `obj[key]`, or `None` after recording why not.
pub(crate) fn number(
    obj: &Map<String, Value>,
    key: &str,
    place: &str,
    issues: &mut Issues,
) -> Option<f64> {
    let value = required(obj, key, place, issues)?;
    match value.as_f64() {
        Some(n) if n.is_finite() => Some(n),
        Some(_) => {
            issues.push(format!("{place}.{key}"), Problem::NotFinite);
            None
        }
        None => {
            issues.push(
                format!("{place}.{key}"),
                Problem::WrongType {
                    expected: "a number",
                },
            );
            None
        }
    }
}

/// `obj[key]` as a boolean; absent or null is `false`.
pub(crate) fn flag(
    obj: &Map<String, Value>,
    key: &str,
    place: &str,
    issues: &mut Issues,
) -> Option<bool> {
    match obj.get(key) {
        None | Some(Value::Null) => Some(false),
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => {
            issues.push(
                format!("{place}.{key}"),
                Problem::WrongType {
                    expected: "true or false",
                },
            );
            None
        }
    }
}

/// `obj[key]` as an array; absent or null is empty.
pub(crate) fn list<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
    place: &str,
    issues: &mut Issues,
) -> &'a [Value] {
    match obj.get(key) {
        None | Some(Value::Null) => &[],
        Some(v) => array(v, &format!("{place}.{key}"), issues).map_or(&[], Vec::as_slice),
    }
}
