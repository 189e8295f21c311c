//! Reading and parsing the feature files of a run, Scenario Outlines expanded as cucumber
//! expands them. Every file is parsed, so that one run names every broken file.

use std::path::{Path, PathBuf};

use cucumber::feature::Ext as _;
use cucumber::gherkin::{EnvError, Feature, GherkinEnv, ParseFileError, Rule, Scenario};

use super::problem::Problem;
use crate::feature_set::FeatureSet;

/// The features of `set` that parse, and the problems of those that do not: the built-in
/// ones first (named `features/<file>`, as in the source tree and as `awconf features export
/// features` writes them), then the user's, by path.
pub fn load(set: &FeatureSet) -> (Vec<Feature>, Vec<Problem>) {
    let mut parsed = Vec::new();
    if set.includes_built_in() {
        for (name, text) in crate::files::BUILT_IN {
            parsed.push(parse_text(&crate::files::built_in_path(name), text));
        }
    }
    if let Some(dir) = set.user_dir() {
        match feature_files(dir) {
            Ok(files) => parsed.extend(files.iter().map(|file| parse_file(file))),
            Err(problem) => parsed.push(Err(problem)),
        }
    }
    let (features, problems): (Vec<_>, Vec<_>) = parsed.into_iter().partition(Result::is_ok);
    (
        features.into_iter().flatten().collect(),
        problems.into_iter().filter_map(Result::err).collect(),
    )
}

/// Parses a feature held in memory, as if read from `path`.
pub fn parse_text(path: &Path, text: &str) -> Result<Feature, Problem> {
    let mut feature = Feature::parse(text, GherkinEnv::default())
        .map_err(|e| parse_problem(path, text, &e.to_string(), None))?;
    feature.path = Some(path.to_path_buf());
    expand(feature, path)
}

fn parse_file(path: &Path) -> Result<Feature, Problem> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Problem::at(path, 0, format!("cannot be read: {e}")))?;
    // Parsed from the file again: only then does the parser tell what it found wrong.
    match Feature::parse_path(path, GherkinEnv::default()) {
        Ok(feature) => expand(feature, path),
        Err(ParseFileError::Reading { source, .. }) => {
            Err(Problem::at(path, 0, format!("cannot be read: {source}")))
        }
        Err(ParseFileError::Parsing { error, source, .. }) => {
            if let Some(EnvError::InconsistentCellCount(rows)) = &error
                && let Some(problem) = uneven_row(path, &text, rows)
            {
                return Err(problem);
            }
            Err(parse_problem(
                path,
                &text,
                &source.to_string(),
                error.as_ref().and_then(hint),
            ))
        }
    }
}

/// The row of a table whose number of cells differs from the table's first row, found in
/// the text: the parser only says where it gave up, after the table.
fn uneven_row(path: &Path, text: &str, rows: &[Vec<String>]) -> Option<Problem> {
    let first = rows.first()?;
    let uneven = rows.iter().find(|row| row.len() != first.len())?;
    let lines: Vec<Option<Vec<String>>> = text.lines().map(cells).collect();
    let start = lines.iter().position(|l| l.as_ref() == Some(first))?;
    let offset = lines[start..]
        .iter()
        .position(|l| l.as_ref() == Some(uneven))?;
    Some(Problem::at(
        path,
        start + offset + 1,
        format!(
            "this table row has {} cell{} where the table's first row has {}",
            uneven.len(),
            if uneven.len() == 1 { "" } else { "s" },
            first.len()
        ),
    ))
}

/// The cells of a `| a | b |` line.
fn cells(line: &str) -> Option<Vec<String>> {
    let inner = line.trim().strip_prefix('|')?.strip_suffix('|')?;
    Some(inner.split('|').map(|c| c.trim().to_string()).collect())
}

/// What the parser's own error adds; its unknown keywords are prefixes of whatever it tried
/// last, which would mislead.
fn hint(error: &EnvError) -> Option<String> {
    match error {
        EnvError::InconsistentCellCount(_) => {
            Some("the rows of a table have different numbers of cells".into())
        }
        EnvError::UnsupportedLanguage(language) => {
            Some(format!("the language {language:?} is not supported"))
        }
        EnvError::UnknownKeyword(_) => None,
    }
}

fn expand(feature: Feature, path: &Path) -> Result<Feature, Problem> {
    feature.expand_examples().map_err(|e| {
        Problem::at(
            path,
            e.pos.line,
            format!(
                "<{}> is used in the Scenario Outline but is no column of its Examples",
                e.name
            ),
        )
    })
}

/// The gherkin parser says `Error at LINE:COL: {"token", ...}` (its fields are private): this
/// names the line, shows it, and says what the parser expected there in Gherkin's words.
fn parse_problem(path: &Path, text: &str, error: &str, hint: Option<String>) -> Problem {
    let parsed = error.strip_prefix("Error at ").and_then(|rest| {
        let (position, expected) = rest.split_once(": ")?;
        let (line, _) = position.split_once(':')?;
        Some((line.parse::<usize>().ok()?, expected))
    });
    let Some((line, expected)) = parsed else {
        return Problem::at(path, 0, format!("does not parse: {error}"));
    };
    let mut expected: Vec<String> = debug_strings(expected)
        .iter()
        .filter_map(|token| expected_in_words(token))
        .collect();
    expected.sort();
    expected.dedup();
    let shown = match text.lines().nth(line.saturating_sub(1)).map(str::trim) {
        Some("") | None => "the line is empty or the file ends there".to_string(),
        Some(content) => format!("the line reads {content:?}"),
    };
    let mut message = format!("does not parse ({shown})");
    if !expected.is_empty() {
        message.push_str(&format!("; expected {}", expected.join(" or ")));
    }
    if let Some(hint) = hint {
        message.push_str(&format!(": {hint}"));
    }
    Problem::at(path, line, message)
}

/// The strings of a `{"a", "b"}` debug rendering, unescaped.
fn debug_strings(set: &str) -> Vec<String> {
    let mut strings = Vec::new();
    let mut chars = set.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut string = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => string.extend(chars.next()),
                '"' => break,
                c => string.push(c),
            }
        }
        strings.push(string);
    }
    strings
}

/// One of the parser's expected tokens in Gherkin's words; `None` for those that say nothing
/// (any character, blanks).
fn expected_in_words(token: &str) -> Option<String> {
    Some(match token {
        "unknown keyword" => {
            "a Gherkin keyword (Feature, Background, Rule, Scenario, Scenario Outline, Examples, Given, When, Then, And, But)".into()
        }
        "inconsistent table row sizes" => "table rows of equal length".into(),
        "\"#\"" => "a comment".into(),
        "\"@\"" => "a tag".into(),
        "_" | "no match" | "' ' | '\\t'" | "EOF" => return None,
        quoted if quoted.len() > 2 && quoted.starts_with('"') && quoted.ends_with('"') => {
            // peg writes a literal as Rust does: quoted, with escapes.
            let literal = &quoted[1..quoted.len() - 1];
            format!("`{}`", literal.replace("\\\"", "\"").replace("\\\\", "\\"))
        }
        other => other.to_string(),
    })
}

/// The `*.feature` files under `dir` and its subdirectories, by path.
fn feature_files(dir: &Path) -> Result<Vec<PathBuf>, Problem> {
    if !dir.is_dir() {
        return Err(Problem::at(dir, 0, "is not a directory of *.feature files"));
    }
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let entries = std::fs::read_dir(&next)
            .map_err(|e| Problem::at(&next, 0, format!("cannot be listed: {e}")))?;
        for entry in entries {
            let path = entry
                .map_err(|e| Problem::at(&next, 0, format!("cannot be listed: {e}")))?
                .path();
            if path.is_dir() {
                pending.push(path);
            } else if path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("feature"))
            {
                files.push(path);
            }
        }
    }
    files.sort();
    if files.is_empty() {
        return Err(Problem::at(dir, 0, "holds no *.feature files"));
    }
    Ok(files)
}

/// Every scenario of a feature, with the Rule it stands in.
pub fn scenarios_of(feature: &Feature) -> impl Iterator<Item = (Option<&Rule>, &Scenario)> {
    feature.scenarios.iter().map(|s| (None, s)).chain(
        feature
            .rules
            .iter()
            .flat_map(|r| r.scenarios.iter().map(move |s| (Some(r), s))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_errors_name_the_line_and_what_was_expected() {
        // The parser stops where the text stops making sense, often the line after the slip.
        let table: &[(&str, usize, &str)] = &[
            (
                "Feature: f\n  Scenario: s\n    Given a\n  Sceanrio: t\n    Given b\n",
                5,
                r#"does not parse (the line reads "Given b"); expected a Gherkin keyword (Feature,"#,
            ),
            (
                "Feture: f\n",
                2,
                "(the line is empty or the file ends there); expected a Gherkin keyword",
            ),
            (
                "Feature: f\n  Scenario: s\n    Given a\n      \"\"\"\n      x\n",
                6,
                r#"expected `"""`"#,
            ),
            (
                "Feature: f\n  Scenario: s\n    Given a\n    | a | b |\n    | c |\n",
                6,
                "expected `|` or table rows of equal length",
            ),
            ("", 2, "expected a comment or a tag"),
            (
                "Feature: f\n  Scenario Outline: s\n    Given <x>\n    Examples:\n      | y |\n      | 1 |\n",
                3,
                "<x> is used in the Scenario Outline but is no column of its Examples",
            ),
        ];
        for (text, line, want) in table {
            let problem = parse_text(Path::new("f.feature"), text).unwrap_err();
            assert_eq!(problem.line, *line, "{problem}");
            assert!(problem.message.contains(want), "{problem}\nlacks {want}");
        }
    }

    #[test]
    fn debug_sets_read_back_as_strings() {
        assert_eq!(
            debug_strings(r#"{"\"|\"", "_", "unknown keyword"}"#),
            ["\"|\"", "_", "unknown keyword"]
        );
    }

    #[test]
    fn a_parse_error_of_a_file_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(
            dir.path().join("good.feature"),
            "Feature: good\n  Scenario: s\n    Given a\n",
        )
        .unwrap();
        let bad = dir.path().join("sub").join("bad.FEATURE");
        std::fs::write(
            &bad,
            "Feature: bad\n  Scenario: s\n    Given a\n   | a | b |\n   | c |\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a feature").unwrap();
        let only = FeatureSet::Only(dir.path().to_path_buf());
        let (features, problems) = load(&only);
        assert_eq!(features.len(), 1);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].file, bad);
        assert_eq!(
            (problems[0].line, problems[0].message.as_str()),
            (
                5,
                "this table row has 1 cell where the table's first row has 2"
            ),
        );
        assert_eq!(
            features[0].path.as_deref(),
            Some(&*dir.path().join("good.feature"))
        );
    }

    #[test]
    fn the_built_in_features_come_first_and_parse() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mine.feature"),
            "Feature: mine\n  Scenario: s\n    Given a\n",
        )
        .unwrap();
        let (with_mine, problems) = load(&FeatureSet::BuiltInAnd(dir.path().to_path_buf()));
        assert_eq!(problems, []);
        assert_eq!(with_mine.len(), crate::files::BUILT_IN.len() + 1);
        assert_eq!(
            with_mine[0].path.as_deref(),
            Some(Path::new("features/components.feature"))
        );
        assert_eq!(with_mine.last().unwrap().name, "mine");
    }

    #[test]
    fn a_directory_without_features_is_a_problem() {
        let empty = tempfile::tempdir().unwrap();
        let table = [
            (empty.path().to_path_buf(), "holds no *.feature files"),
            (empty.path().join("missing"), "is not a directory"),
        ];
        for (dir, want) in table {
            let (_, problems) = load(&FeatureSet::Only(dir));
            assert!(problems[0].message.contains(want), "{}", problems[0]);
        }
    }
}
