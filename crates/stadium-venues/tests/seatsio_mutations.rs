//! Every value of a small seats.io chart replaced by values of every JSON type: the
//! parser answers each with a plan or a refusal naming a path from `$`, never a panic.

use serde_json::{Value, json};
use stadium_venues::{ImportError, parse_seatsio};

fn chart() -> Value {
    json!({
        "name": "Hall",
        "categories": {"list": [
            {"key": 1, "label": "Stalls", "color": "#111111", "accessible": false},
            {"key": "w", "label": "Wheelchair", "accessible": true}
        ]},
        "zones": {"list": [{"key": "z", "label": "Ground"}]},
        "subChart": {
            "sections": [{
                "label": "S1", "zone": "z", "categoryKey": 1, "topLeft": {"x": 10, "y": 20},
                "subChart": {"rows": [{"label": "A", "seats": [
                    {"label": "1", "x": 0, "y": 0, "uuid": "u1"},
                    {"label": "2", "x": 5, "y": 0, "categoryKey": "w", "accessible": true}
                ]}], "tables": []}
            }],
            "rows": [{"label": "R", "sectionLabel": "Floor", "categoryLabel": "Stalls",
                      "seats": [{"label": "1", "x": 0, "y": 0}]}],
            "booths": [{"label": "B1"}]
        }
    })
}

/// JSON pointers of every value in `value`, the root excluded.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    let children: Vec<(String, &Value)> = match value {
        Value::Object(map) => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => Vec::new(),
    };
    for (key, child) in children {
        let pointer = format!("{at}/{key}");
        out.push(pointer.clone());
        pointers(child, pointer, out);
    }
}

#[test]
fn any_value_of_any_type_is_parsed_or_refused_with_a_path() {
    let original = chart();
    let bytes = serde_json::to_vec(&original).unwrap();
    assert_eq!(parse_seatsio(&bytes).unwrap().seat_count(), 3);
    let mut all = Vec::new();
    pointers(&original, String::new(), &mut all);
    let replacements = [
        Value::Null,
        json!(true),
        json!(-1.5e308),
        json!(""),
        json!("x".repeat(300)),
        json!([]),
        json!({}),
        json!([{}]),
    ];
    let mut refused = 0;
    for pointer in &all {
        for replacement in &replacements {
            let mut mutated = original.clone();
            *mutated.pointer_mut(pointer).unwrap() = replacement.clone();
            let bytes = serde_json::to_vec(&mutated).unwrap();
            match parse_seatsio(&bytes) {
                Ok(plan) => assert!(plan.seat_count() <= 3, "{pointer} = {replacement}"),
                Err(ImportError::Invalid { issues }) => {
                    refused += 1;
                    assert!(
                        issues[0].place.starts_with('$') || issues[0].place == "plan",
                        "{pointer} = {replacement}: {}",
                        issues[0]
                    );
                    assert!(issues[0].to_string().len() < 400, "{}", issues[0]);
                }
                Err(other) => panic!("{pointer} = {replacement}: {other}"),
            }
        }
    }
    assert!(refused > all.len(), "most replacements are refused");
}
