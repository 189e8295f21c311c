//! The PodSet path grammar (§5.1): the literal `template`, then `.field` and `[index]` elements.
//!
//! Elements are read lazily while the template is walked, so that a path that is both malformed
//! and unresolvable reports the same (first) error as the reference.

use serde_json::{Map, Value};

/// The first element of every path; it denotes the component template itself.
pub const ROOT: &str = "template";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathElement {
    Field(String),
    Index(i64),
}

/// A path error; the texts are those of the reference. `pos` is the part of the path processed
/// so far as the reference records it: for field elements it includes the `.` that introduces
/// the field, and an index element adds `[<index>` without its `]`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("first element of the path must be 'template'")]
    FirstElement,
    #[error("at path position '{pos}' invalid array index '{rest}'")]
    UnterminatedIndex { pos: String, rest: String },
    #[error("at path position '{pos}' invalid index expression '{index}'")]
    InvalidIndex { pos: String, index: String },
    #[error("at path position '{pos}' found non-array value")]
    NotAnArray { pos: String },
    #[error("at path position '{pos}' out of bounds index '{index}'")]
    OutOfBounds { pos: String, index: i64 },
    #[error("at path position '{pos}' non-map value")]
    NotAMap { pos: String },
    #[error("at path position '{pos}' missing field '{field}'")]
    MissingField { pos: String, field: String },
    #[error("at path position '{pos}' invalid path element '{rest}'")]
    InvalidElement { pos: String, rest: String },
}

/// One element together with the position reported if applying it to the template fails.
struct Step {
    element: PathElement,
    pos: String,
}

struct Steps<'p> {
    rest: &'p str,
    processed: String,
}

impl<'p> Steps<'p> {
    fn new(path: &'p str) -> Result<Self, PathError> {
        let rest = path.strip_prefix(ROOT).ok_or(PathError::FirstElement)?;
        Ok(Steps {
            rest,
            processed: ROOT.to_string(),
        })
    }

    fn index(&mut self) -> Result<Step, PathError> {
        let pos = self.processed.clone();
        let Some(end) = self.rest.find(']') else {
            return Err(PathError::UnterminatedIndex {
                pos,
                rest: self.rest.to_string(),
            });
        };
        let raw = &self.rest[1..end];
        // Rust's integer parsing accepts exactly what Go's strconv.Atoi accepts.
        let index = raw.parse::<i64>().map_err(|_| PathError::InvalidIndex {
            pos: pos.clone(),
            index: raw.to_string(),
        })?;
        self.processed.push_str(&self.rest[..end]);
        self.rest = &self.rest[end + 1..];
        Ok(Step {
            element: PathElement::Index(index),
            pos,
        })
    }

    fn field(&mut self) -> Step {
        self.rest = &self.rest[1..];
        self.processed.push('.');
        let pos = self.processed.clone();
        // A delimiter at offset 0 is not one: only the first `.` and the first `[` are looked at.
        let mut end = self.rest.len();
        if let Some(dot) = self.rest.find('.').filter(|&i| i > 0) {
            end = dot;
        }
        if let Some(bracket) = self.rest.find('[').filter(|&i| i > 0 && i < end) {
            end = bracket;
        }
        let name = self.rest[..end].to_string();
        self.processed.push_str(&name);
        self.rest = &self.rest[end..];
        Step {
            element: PathElement::Field(name),
            pos,
        }
    }
}

impl Iterator for Steps<'_> {
    type Item = Result<Step, PathError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            None
        } else if self.rest.starts_with('[') {
            Some(self.index())
        } else if self.rest.starts_with('.') {
            Some(Ok(self.field()))
        } else {
            let err = PathError::InvalidElement {
                pos: self.processed.clone(),
                rest: self.rest.to_string(),
            };
            self.rest = "";
            Some(Err(err))
        }
    }
}

/// Parses a path without a template: only the syntax errors of §5.1 can occur.
pub fn parse(path: &str) -> Result<Vec<PathElement>, PathError> {
    Steps::new(path)?
        .map(|step| step.map(|s| s.element))
        .collect()
}

/// Walks `path` inside `template` (the `template` element denotes `template` itself).
pub fn resolve<'v>(template: &'v Value, path: &str) -> Result<&'v Value, PathError> {
    let mut cursor = template;
    for step in Steps::new(path)? {
        let Step { element, pos } = step?;
        cursor = match element {
            PathElement::Index(index) => {
                let items = cursor
                    .as_array()
                    .ok_or(PathError::NotAnArray { pos: pos.clone() })?;
                usize::try_from(index)
                    .ok()
                    .and_then(|i| items.get(i))
                    .ok_or(PathError::OutOfBounds { pos, index })?
            }
            PathElement::Field(name) => {
                let map = cursor
                    .as_object()
                    .ok_or(PathError::NotAMap { pos: pos.clone() })?;
                map.get(&name)
                    .ok_or(PathError::MissingField { pos, field: name })?
            }
        };
    }
    Ok(cursor)
}

/// Like [`resolve`], but the value must be a map (a pod template candidate).
pub fn resolve_map<'v>(
    template: &'v Value,
    path: &str,
) -> Result<&'v Map<String, Value>, PathError> {
    resolve(template, path)?
        .as_object()
        .ok_or_else(|| PathError::NotAMap {
            pos: path.to_string(),
        })
}

/// Mutable [`resolve_map`]: validated on a shared borrow, then reached by JSON pointer.
pub fn resolve_map_mut<'v>(
    template: &'v mut Value,
    path: &str,
) -> Result<&'v mut Map<String, Value>, PathError> {
    resolve_map(template, path)?;
    let pointer = json_pointer(&parse(path)?);
    template
        .pointer_mut(&pointer)
        .and_then(Value::as_object_mut)
        .ok_or_else(|| PathError::NotAMap {
            pos: path.to_string(),
        })
}

fn json_pointer(elements: &[PathElement]) -> String {
    elements
        .iter()
        .map(|element| match element {
            PathElement::Field(name) => format!("/{}", name.replace('~', "~0").replace('/', "~1")),
            PathElement::Index(index) => format!("/{index}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn jobset() -> Value {
        json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "spec": {
                "replicatedJobs": [
                    {"name": "a", "template": {"spec": {"template": {"spec": {"containers": []}}}}},
                    {"name": "b"}
                ],
                "a10": "x",
                ".x": {"y": 1},
                "[0]": 7,
                "with/slash~tilde": {"k": "v"}
            }
        })
    }

    #[rstest]
    #[case::root("template", vec![])]
    #[case::fields("template.spec.template", vec![PathElement::Field("spec".into()), PathElement::Field("template".into())])]
    #[case::index_then_field("template.spec.replicatedJobs[0].template", vec![
        PathElement::Field("spec".into()),
        PathElement::Field("replicatedJobs".into()),
        PathElement::Index(0),
        PathElement::Field("template".into()),
    ])]
    #[case::leading_dot_is_part_of_name("template..x", vec![PathElement::Field(".x".into())])]
    #[case::only_first_dot_is_looked_at("template..x.y", vec![PathElement::Field(".x.y".into())])]
    #[case::bracket_at_start_of_name("template.[0]", vec![PathElement::Field("[0]".into())])]
    #[case::signed_index("template[+3]", vec![PathElement::Index(3)])]
    #[case::negative_index_parses("template[-1]", vec![PathElement::Index(-1)])]
    #[case::empty_field("template.", vec![PathElement::Field(String::new())])]
    fn parses_valid_paths(#[case] path: &str, #[case] expected: Vec<PathElement>) {
        assert_eq!(parse(path), Ok(expected));
    }

    #[rstest]
    #[case::wrong_root("spec.template", "first element of the path must be 'template'")]
    #[case::empty("", "first element of the path must be 'template'")]
    #[case::unterminated(
        "template.spec[0",
        "at path position 'template.spec' invalid array index '[0'"
    )]
    #[case::non_integer(
        "template.spec[a10]",
        "at path position 'template.spec' invalid index expression 'a10'"
    )]
    #[case::space_in_index(
        "template.x[ 1]",
        "at path position 'template.x' invalid index expression ' 1'"
    )]
    #[case::empty_index(
        "template.x[]",
        "at path position 'template.x' invalid index expression ''"
    )]
    #[case::double_bracket("template]]", "at path position 'template' invalid path element ']]'")]
    #[case::glued_root("templateX", "at path position 'template' invalid path element 'X'")]
    // The reference's position leaves out the `]` of an index (found by fuzzing against it).
    #[case::junk_after_index(
        "template.a[0]x",
        "at path position 'template.a[0' invalid path element 'x'"
    )]
    fn rejects_malformed_paths(#[case] path: &str, #[case] message: &str) {
        assert_eq!(
            parse(path).map_err(|e| e.to_string()),
            Err(message.to_string())
        );
    }

    #[rstest]
    #[case::root("template", "/kind", json!("JobSet"))]
    #[case::index("template.spec.replicatedJobs[1].name", "", json!("b"))]
    #[case::dotted_name("template.spec..x", "", json!({"y": 1}))]
    #[case::bracket_name("template.spec.[0]", "", json!(7))]
    #[case::name_with_slash("template.spec.with/slash~tilde.k", "", json!("v"))]
    fn resolves_values(#[case] path: &str, #[case] pointer: &str, #[case] expected: Value) {
        let template = jobset();
        let found = resolve(&template, path).map(|v| v.pointer(pointer).cloned());
        assert_eq!(found, Ok(Some(expected)));
    }

    #[rstest]
    #[case::non_array(
        "template.spec[0]",
        "at path position 'template.spec' found non-array value"
    )]
    #[case::negative(
        "template.spec.replicatedJobs[-1]",
        "at path position 'template.spec.replicatedJobs' out of bounds index '-1'"
    )]
    #[case::too_large(
        "template.spec.replicatedJobs[10]",
        "at path position 'template.spec.replicatedJobs' out of bounds index '10'"
    )]
    #[case::field_of_string("template.kind.x", "at path position 'template.kind.' non-map value")]
    #[case::missing(
        "template.spec.replicatedJobs[1].template",
        "at path position 'template.spec.replicatedJobs[1.' missing field 'template'"
    )]
    #[case::index_of_an_index(
        "template.spec.replicatedJobs[0][0]",
        "at path position 'template.spec.replicatedJobs[0' found non-array value"
    )]
    #[case::missing_before_bad_index(
        "template.nope[x]",
        "at path position 'template.' missing field 'nope'"
    )]
    #[case::index_syntax_before_type(
        "template.kind[x]",
        "at path position 'template.kind' invalid index expression 'x'"
    )]
    fn reports_resolution_errors(#[case] path: &str, #[case] message: &str) {
        let template = jobset();
        assert_eq!(
            resolve(&template, path).map_err(|e| e.to_string()),
            Err(message.to_string())
        );
    }

    #[test]
    fn final_value_must_be_a_map_for_templates() {
        let template = jobset();
        assert_eq!(
            resolve_map(&template, "template.kind").map_err(|e| e.to_string()),
            Err("at path position 'template.kind' non-map value".to_string())
        );
        assert!(resolve_map(&template, "template.spec.replicatedJobs[0].template").is_ok());
    }

    #[test]
    fn mutable_resolution_reaches_the_same_map() {
        let mut template = jobset();
        resolve_map_mut(&mut template, "template.spec.with/slash~tilde")
            .map(|m| m.insert("added".into(), json!(true)))
            .ok();
        resolve_map_mut(&mut template, "template.spec.replicatedJobs[0].template")
            .map(|m| m.insert("added".into(), json!(1)))
            .ok();
        assert_eq!(template["spec"]["with/slash~tilde"]["added"], json!(true));
        assert_eq!(
            template["spec"]["replicatedJobs"][0]["template"]["added"],
            json!(1)
        );
        assert!(resolve_map_mut(&mut template, "template.spec.a10").is_err());
    }
}
