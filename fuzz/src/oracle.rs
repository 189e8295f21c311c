//! The Go originals (fuzz/go-oracle), one process per fuzzing process: a JSON request per line
//! in, a JSON answer per line out. `fuzz/run` builds it and names it in `AWCONF_GO_ORACLE`.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, OnceLock};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub const ENV: &str = "AWCONF_GO_ORACLE";

struct Process {
    _child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

fn process() -> &'static Mutex<Process> {
    static PROCESS: OnceLock<Mutex<Process>> = OnceLock::new();
    PROCESS.get_or_init(|| {
        let path = std::env::var(ENV)
            .unwrap_or_else(|_| panic!("{ENV} must name the Go oracle binary (see fuzz/run)"));
        let mut child = Command::new(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("starting the Go oracle {path}: {e}"));
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        Mutex::new(Process {
            _child: child,
            stdin,
            stdout,
        })
    })
}

fn ask<T: DeserializeOwned>(request: Value) -> T {
    let mut process = process().lock().unwrap_or_else(|e| e.into_inner());
    let mut line = serde_json::to_string(&request).expect("a request is JSON");
    line.push('\n');
    process
        .stdin
        .write_all(line.as_bytes())
        .expect("writing to the Go oracle");
    let mut answer = String::new();
    process
        .stdout
        .read_line(&mut answer)
        .expect("reading from the Go oracle");
    assert!(!answer.is_empty(), "the Go oracle exited");
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("Go oracle answer {answer:?}: {e}"))
}

/// `time.ParseDuration`, and `Duration.String()` of what it parsed.
#[derive(Debug, Deserialize)]
pub struct Duration {
    pub ok: bool,
    pub nanos: i64,
    pub string: String,
}

pub fn parse_duration(input: &str) -> Duration {
    ask(json!({"op": "duration", "input": input}))
}

/// `time.Duration(nanos).String()`.
pub fn format_duration(nanos: i64) -> String {
    ask(json!({"op": "duration_string", "nanos": nanos}))
}

/// `strconv.Atoi`.
pub fn atoi(input: &str) -> Option<i64> {
    ask(json!({"op": "atoi", "input": input}))
}

/// `resource.ParseQuantity`: the error is `format` (ErrFormatWrong), `suffix` (ErrSuffix) or
/// `numeric` (ErrNumeric).
#[derive(Debug, Deserialize)]
pub struct Quantity {
    pub ok: bool,
    pub sign: i32,
    #[serde(default)]
    pub error: String,
}

pub fn parse_quantity(input: &str) -> Quantity {
    ask(json!({"op": "quantity", "input": input}))
}

/// The reference's podSet path walk, `utils.GetRawTemplate`.
#[derive(Debug, Deserialize)]
pub struct RawTemplate {
    pub ok: bool,
    #[serde(default)]
    pub value: Value,
    #[serde(default)]
    pub error: String,
}

pub fn raw_template(template: &Value, path: &str) -> RawTemplate {
    ask(json!({"op": "path", "input": path, "template": template}))
}
