//! A chart's categories (`categories.list`) and how its sections, rows and seats name
//! them: by `categoryKey`, else by `categoryLabel`.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::error::{Issues, Problem};
use crate::json::{array, flag, label, object, required};
use crate::plan::Category;

/// A category reference one level (seat, row, section) makes: `Some(None)` when it makes
/// none, `None` when it is wrong (the issue is recorded, and seats relying on it are
/// dropped without a second issue).
pub(super) type Named = Option<Option<String>>;

/// The categories in chart order, with what seat references need: each key's
/// accessibility and the key of each label.
pub(super) struct Categories {
    pub(super) list: Vec<Category>,
    pub(super) accessible: HashMap<String, bool>,
    key_of_label: HashMap<String, String>,
}

impl Categories {
    pub(super) fn read(root: &Map<String, Value>, issues: &mut Issues) -> Self {
        let mut out = Categories {
            list: Vec::new(),
            accessible: HashMap::new(),
            key_of_label: HashMap::new(),
        };
        let mut first: HashMap<String, String> = HashMap::new();
        let Some(list) = required(root, "categories", "$", issues)
            .and_then(|v| object(v, "$.categories", issues))
            .and_then(|o| required(o, "list", "$.categories", issues))
            .and_then(|v| array(v, "$.categories.list", issues))
        else {
            return out;
        };
        for (i, value) in list.iter().enumerate() {
            let place = format!("$.categories.list[{i}]");
            let Some(obj) = object(value, &place, issues) else {
                continue;
            };
            let key = required(obj, "key", &place, issues)
                .and_then(|v| label(v, &format!("{place}.key"), issues));
            let name = required(obj, "label", &place, issues)
                .and_then(|v| label(v, &format!("{place}.label"), issues));
            let color = match obj.get("color") {
                Some(Value::String(c)) if !c.is_empty() => Some(c.clone()),
                None | Some(Value::Null) => Some(String::from("#888888")),
                Some(_) => {
                    issues.push(
                        format!("{place}.color"),
                        Problem::WrongType {
                            expected: "a string",
                        },
                    );
                    None
                }
            };
            let accessible = flag(obj, "accessible", &place, issues);
            let (Some(key), Some(name), Some(color), Some(accessible)) =
                (key, name, color, accessible)
            else {
                continue;
            };
            if let Some(at) = first.get(&key) {
                issues.push(
                    format!("{place}.key"),
                    Problem::RepeatedCategory {
                        name: key,
                        first: at.clone(),
                    },
                );
                continue;
            }
            first.insert(key.clone(), format!("{place}.key"));
            out.accessible.insert(key.clone(), accessible);
            out.key_of_label
                .entry(name.clone())
                .or_insert_with(|| key.clone());
            out.list.push(Category {
                code: key,
                name,
                color,
            });
        }
        out
    }

    /// The category `obj` names by `categoryKey`, else by `categoryLabel`.
    pub(super) fn named(
        &self,
        obj: &Map<String, Value>,
        place: &str,
        issues: &mut Issues,
    ) -> Named {
        let (field, found) = match (obj.get("categoryKey"), obj.get("categoryLabel")) {
            (Some(v), _) if !v.is_null() => ("categoryKey", v),
            (_, Some(v)) if !v.is_null() => ("categoryLabel", v),
            _ => return Some(None),
        };
        let at = format!("{place}.{field}");
        let text = label(found, &at, issues)?;
        let key = if field == "categoryKey" {
            self.accessible.contains_key(&text).then_some(text.clone())
        } else {
            self.key_of_label.get(&text).cloned()
        };
        if key.is_none() {
            issues.push(at, Problem::UnknownCategory { name: text });
            return None;
        }
        Some(key)
    }
}
