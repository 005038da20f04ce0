//! Telling a plan's format from its content, so a file imports whatever its name says.

use serde_json::Value;

use crate::plan::SourceFormat;

/// The format `bytes` are written in, from their content alone:
/// - a JSON object with a `subChart` or a `categories` object (seats.io keeps its
///   categories under `categories.list`) is a seats.io chart;
/// - any other JSON object or array is a pretix plan (pretix has `categories` and `zones`
///   arrays at the top);
/// - bytes starting with `{` that do not parse as JSON are a seats.io chart when they
///   mention `"subChart"`, else a pretix plan, so the JSON parser reports the syntax
///   error rather than the CSV reader;
/// - anything else is a CSV manifest.
///
/// Never [`SourceFormat::Generated`]. Leading whitespace and a UTF-8 byte order mark
/// are skipped.
pub fn detect_format(bytes: &[u8]) -> SourceFormat {
    let text = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let start = text.iter().position(|b| !b.is_ascii_whitespace());
    if !matches!(start.map(|i| text[i]), Some(b'{' | b'[')) {
        return SourceFormat::CsvManifest;
    }
    match serde_json::from_slice::<Value>(text) {
        Ok(Value::Object(root)) => {
            let seatsio = root.contains_key("subChart")
                || root.get("categories").is_some_and(Value::is_object);
            if seatsio {
                SourceFormat::SeatsioJson
            } else {
                SourceFormat::PretixJson
            }
        }
        Ok(_) => SourceFormat::PretixJson,
        Err(_) if contains(text, b"\"subChart\"") => SourceFormat::SeatsioJson,
        Err(_) => SourceFormat::PretixJson,
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_from_the_content() {
        let seatsio = br#"{"name": "x", "categories": {"list": []}, "subChart": {}}"#;
        assert_eq!(detect_format(seatsio), SourceFormat::SeatsioJson);
        let only_categories = br#"{"categories": {"list": []}}"#;
        assert_eq!(detect_format(only_categories), SourceFormat::SeatsioJson);
        let pretix = b"\n  {\"name\": \"x\", \"categories\": [], \"zones\": []}";
        assert_eq!(detect_format(pretix), SourceFormat::PretixJson);
        let broken_seatsio = br#"{"subChart": {"rows": [}"#;
        assert_eq!(detect_format(broken_seatsio), SourceFormat::SeatsioJson);
        assert_eq!(detect_format(br#"{"zones": ["#), SourceFormat::PretixJson);
        let csv = b"\xEF\xBB\xBFsection,row,seat,category\nA,1,1,Main\n";
        assert_eq!(detect_format(csv), SourceFormat::CsvManifest);
        assert_eq!(detect_format(b""), SourceFormat::CsvManifest);
    }
}
