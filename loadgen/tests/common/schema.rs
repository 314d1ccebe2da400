//! A JSON Schema (2020-12) validator for the keywords schema/result-v1.schema.json
//! uses, and only those. Ours rather than the `jsonschema` crate: that crate and the
//! two regex engines it brings took over a minute of the tests' build on CI's two
//! cores, to check one schema whose keywords fit in a page.
//!
//! A keyword it does not know panics, and so does a `patternProperties` pattern:
//! a schema that grows one must teach the validator, never pass unchecked.

use serde_json::{Map, Value};

/// Keywords that annotate and do not constrain (or hold definitions reached by `$ref`).
const ANNOTATIONS: [&str; 5] = ["$schema", "$id", "$defs", "title", "description"];

/// The keywords that check an object's members, together.
const OBJECT_KEYWORDS: [&str; 3] = ["properties", "patternProperties", "additionalProperties"];

/// Every violation of `doc` against `schema`, as "what at /instance/path".
pub fn errors(schema: &Value, doc: &Value) -> Vec<String> {
    let mut found = Vec::new();
    check(schema, schema, doc, "", &mut found);
    found
}

fn check(root: &Value, schema: &Value, doc: &Value, at: &str, found: &mut Vec<String>) {
    let rules = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return found.push(format!("no value is allowed here at {at}")),
        Value::Object(rules) => rules,
        other => panic!("not a schema: {other}"),
    };
    for (keyword, arg) in rules {
        match keyword.as_str() {
            k if ANNOTATIONS.contains(&k) => {}
            "$ref" => check(root, resolve(root, arg), doc, at, found),
            "type" => {
                let names: Vec<&str> = match arg {
                    Value::String(one) => vec![one],
                    Value::Array(many) => many.iter().map(|n| n.as_str().expect("type names")).collect(),
                    other => panic!("bad type: {other}"),
                };
                if !names.iter().any(|n| has_type(doc, n)) {
                    found.push(format!("{doc} is not of type {} at {at}", names.join(" or ")));
                }
            }
            "const" if !same(doc, arg) => found.push(format!("{doc} is not {arg} at {at}")),
            "enum" if !arg.as_array().expect("enum list").iter().any(|v| same(doc, v)) => {
                found.push(format!("{doc} is not one of {arg} at {at}"))
            }
            "const" | "enum" => {}
            "minimum" | "maximum" => {
                let bound = arg.as_f64().unwrap_or_else(|| panic!("{keyword} {arg} is not a number"));
                let Some(value) = doc.as_f64() else { continue }; // not a number: `type`'s to refuse
                if (keyword == "minimum" && value < bound) || (keyword == "maximum" && value > bound) {
                    let side = if keyword == "minimum" { "below" } else { "above" };
                    found.push(format!("{doc} is {side} its {keyword} {arg} at {at}"));
                }
            }
            "minItems" | "maxItems" => {
                let bound = whole(arg).unwrap_or_else(|| panic!("{keyword} {arg} is not a whole number"));
                let Some(items) = doc.as_array() else { continue };
                let n = items.len() as u64;
                if (keyword == "minItems" && n < bound) || (keyword == "maxItems" && n > bound) {
                    found.push(format!("{n} items is outside its {keyword} {bound} at {at}"));
                }
            }
            "items" => {
                for (i, item) in doc.as_array().into_iter().flatten().enumerate() {
                    check(root, arg, item, &format!("{at}/{i}"), found);
                }
            }
            "required" => {
                let Some(object) = doc.as_object() else { continue };
                for name in arg.as_array().expect("required list") {
                    let name = name.as_str().expect("required names");
                    if !object.contains_key(name) {
                        found.push(format!("\"{name}\" is a required property at {at}"));
                    }
                }
            }
            "properties" | "patternProperties" | "additionalProperties" => {
                if let Some(object) = doc.as_object() {
                    // Checked once, for all three: additionalProperties depends on the others.
                    let first = OBJECT_KEYWORDS.iter().find(|k| rules.contains_key(**k));
                    if first == Some(&keyword.as_str()) {
                        check_object(root, rules, object, at, found);
                    }
                }
            }
            "allOf" => {
                for sub in arg.as_array().expect("allOf list") {
                    check(root, sub, doc, at, found);
                }
            }
            "oneOf" => {
                let valid = arg.as_array().expect("oneOf list").iter().filter(|sub| passes(root, sub, doc)).count();
                if valid != 1 {
                    found.push(format!("{doc} is valid under {valid} of oneOf's schemas, not 1, at {at}"));
                }
            }
            "if" => {
                let branch = if passes(root, arg, doc) { rules.get("then") } else { rules.get("else") };
                if let Some(branch) = branch {
                    check(root, branch, doc, at, found);
                }
            }
            "then" | "else" => {} // with "if"
            other => panic!("schema keyword {other:?} is not checked by tests/common/schema.rs: teach it"),
        }
    }
}

/// `properties`, `patternProperties` and `additionalProperties` of one object schema.
fn check_object(root: &Value, rules: &Map<String, Value>, object: &Map<String, Value>, at: &str, found: &mut Vec<String>) {
    let declared = rules.get("properties").and_then(Value::as_object);
    let patterns = rules.get("patternProperties").and_then(Value::as_object);
    for (name, value) in object {
        let here = format!("{at}/{name}");
        let mut matched = false;
        if let Some(schema) = declared.and_then(|d| d.get(name)) {
            check(root, schema, value, &here, found);
            matched = true;
        }
        for (pattern, schema) in patterns.into_iter().flatten() {
            if pattern_matches(pattern, name) {
                check(root, schema, value, &here, found);
                matched = true;
            }
        }
        match rules.get("additionalProperties") {
            Some(Value::Bool(false)) if !matched => {
                found.push(format!("additional property \"{name}\" is not allowed at {at}"))
            }
            Some(schema) if !matched => check(root, schema, value, &here, found),
            _ => {}
        }
    }
}

/// JSON equality as 2020-12 has it: numbers by value (1 and 1.0 are the same).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// A count as a schema may write it: 2, or 2.0.
fn whole(n: &Value) -> Option<u64> {
    n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
}

fn passes(root: &Value, schema: &Value, doc: &Value) -> bool {
    let mut found = Vec::new();
    check(root, schema, doc, "", &mut found);
    found.is_empty()
}

fn resolve<'a>(root: &'a Value, reference: &Value) -> &'a Value {
    let pointer = reference.as_str().and_then(|r| r.strip_prefix('#')).expect("a local $ref");
    root.pointer(pointer).unwrap_or_else(|| panic!("$ref {reference} points nowhere"))
}

fn has_type(doc: &Value, name: &str) -> bool {
    match name {
        "null" => doc.is_null(),
        "boolean" => doc.is_boolean(),
        "string" => doc.is_string(),
        "array" => doc.is_array(),
        "object" => doc.is_object(),
        "number" => doc.is_number(),
        // 2020-12: a number with no fractional part is an integer (1.0 too).
        "integer" => doc.is_i64() || doc.is_u64() || doc.as_f64().is_some_and(|f| f.fract() == 0.0),
        other => panic!("unknown type {other:?}"),
    }
}

/// The schema's property-name patterns, each written out: a regex engine for two
/// patterns was the build time this module saves.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match pattern {
        // a percentile: "50", "99.9"
        r"^[0-9]+(\.[0-9]+)?$" => match name.split_once('.') {
            Some((whole, fraction)) => digits(whole) && digits(fraction),
            None => digits(name),
        },
        // an HTTP status code: "200"
        r"^[1-5][0-9][0-9]$" => name.len() == 3 && digits(name) && (b'1'..=b'5').contains(&name.as_bytes()[0]),
        other => panic!("patternProperties pattern {other:?} is not known to tests/common/schema.rs: add it"),
    }
}
