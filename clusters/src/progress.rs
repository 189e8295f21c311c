//! What a person watching long work sees: on a terminal, indicatif spinners and bars that
//! redraw in place; otherwise (CI logs, a pipe) plain lines on stderr, a few per task, so a
//! log shows progress without a line per redraw.

use std::io::IsTerminal;
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};

/// How often a log (not a terminal) is told that a task is still going.
const LOG_EVERY: Duration = Duration::from_secs(30);

/// One set of bars for the whole process, so that concurrent tasks stack instead of
/// overwriting each other; `None` when stderr is not a terminal.
fn bars() -> Option<&'static MultiProgress> {
    static BARS: OnceLock<Option<MultiProgress>> = OnceLock::new();
    BARS.get_or_init(|| std::io::stderr().is_terminal().then(MultiProgress::new))
        .as_ref()
}

/// Prints `line` above the bars on a terminal, or on its own line in a log.
pub fn println(line: &str) {
    match bars() {
        Some(bars) => {
            let _ = bars.println(line);
        }
        None => eprintln!("{line}"),
    }
}

/// A task of unknown length (a `go build`): a spinner with the time it has taken, or in a
/// log a line at the start, one every 30 s and one at the end.
pub struct Task {
    bars: Option<&'static MultiProgress>,
    label: String,
    started: Instant,
    bar: Option<ProgressBar>,
    ticker: Option<(mpsc::Sender<()>, std::thread::JoinHandle<()>)>,
}

impl Task {
    pub fn start(label: &str, note: &str) -> Task {
        Task::start_on(bars(), label, note)
    }

    fn start_on(bars: Option<&'static MultiProgress>, label: &str, note: &str) -> Task {
        let started = Instant::now();
        let label = label.to_string();
        match bars {
            Some(bars) => {
                let bar = bars.add(ProgressBar::new_spinner());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {msg} {elapsed}")
                        .expect("a valid template"),
                );
                bar.set_message(format!("{label}: {note}"));
                bar.enable_steady_tick(Duration::from_millis(120));
                Task {
                    bars: Some(bars),
                    label,
                    started,
                    bar: Some(bar),
                    ticker: None,
                }
            }
            None => {
                eprintln!("{label}: {note}");
                let (tx, rx) = mpsc::channel::<()>();
                let name = label.clone();
                let ticker = std::thread::spawn(move || {
                    while let Err(mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(LOG_EVERY) {
                        eprintln!("{name}: still going after {}s", started.elapsed().as_secs());
                    }
                });
                Task {
                    bars: None,
                    label,
                    started,
                    bar: None,
                    ticker: Some((tx, ticker)),
                }
            }
        }
    }

    /// Ends the task with `outcome` (e.g. `built`), and how long it took.
    pub fn finish(mut self, outcome: &str) -> Duration {
        let elapsed = self.started.elapsed();
        self.stop();
        println(&format!(
            "{}: {outcome} in {}s",
            self.label,
            elapsed.as_secs()
        ));
        elapsed
    }

    fn stop(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            if let Some(bars) = self.bars {
                bars.remove(&bar);
            }
        }
        if let Some((tx, ticker)) = self.ticker.take() {
            let _ = tx.send(());
            let _ = ticker.join();
        }
    }
}

/// A task that ends without `finish` (an error, a panic) leaves no spinner or ticker behind.
impl Drop for Task {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Work of known size (the suite's scenarios): a bar of done of total with a message, or in
/// a log one line per item as it ends.
pub struct Counter {
    bar: Option<ProgressBar>,
}

impl Counter {
    pub fn start(total: u64, label: &str) -> Counter {
        Counter::start_on(bars(), total, label)
    }

    fn start_on(bars: Option<&'static MultiProgress>, total: u64, label: &str) -> Counter {
        let bar = bars.map(|bars| {
            let bar = bars.add(ProgressBar::new(total));
            bar.set_style(
                ProgressStyle::with_template(&format!(
                    "{label} {{bar:30}} {{pos}}/{{len}} {{elapsed}} {{msg}}"
                ))
                .expect("a valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(500));
            bar
        });
        Counter { bar }
    }

    /// One more done; `line` is printed above the bar or as a log line.
    pub fn advance(&self, line: &str) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
        println(line);
    }

    /// `more` items to do beyond those it started with (scenarios that run again).
    pub fn add_to_total(&self, more: u64) {
        if let Some(bar) = &self.bar {
            bar.inc_length(more);
        }
    }

    /// What the bar says beside the count (failures so far, the slowest running).
    pub fn set_message(&self, message: String) {
        if let Some(bar) = &self.bar {
            bar.set_message(message);
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use indicatif::ProgressDrawTarget;

    use super::*;

    fn hidden_terminal() -> &'static MultiProgress {
        Box::leak(Box::new(MultiProgress::with_draw_target(
            ProgressDrawTarget::hidden(),
        )))
    }

    /// In a log: plain lines, and a task's ticker thread ends with it.
    #[test]
    fn off_a_terminal_tasks_and_counters_are_lines() {
        let task = Task::start_on(None, "[toolchain] etcd v3.6.16", "building");
        assert!(task.bar.is_none() && task.ticker.is_some());
        assert!(task.finish("built") < Duration::from_secs(5));
        let counter = Counter::start_on(None, 2, "scenarios");
        assert!(counter.bar.is_none());
        counter.advance("[1/2] passed a: b");
        drop(Task::start_on(None, "x", "y"));
    }

    /// On a terminal: a spinner that goes when the task ends (finished or dropped), and a
    /// counter that counts.
    #[test]
    fn on_a_terminal_bars_come_and_go() {
        let bars = hidden_terminal();
        let task = Task::start_on(Some(bars), "[toolchain] etcd v3.6.16", "building");
        let spinner = task.bar.clone().unwrap();
        assert!(task.ticker.is_none());
        task.finish("built");
        assert!(spinner.is_finished());
        let dropped = Task::start_on(Some(bars), "x", "y");
        let spinner = dropped.bar.clone().unwrap();
        drop(dropped);
        assert!(spinner.is_finished());

        let counter = Counter::start_on(Some(bars), 2, "scenarios");
        counter.advance("[1/2] passed a: b");
        let bar = counter.bar.as_ref().unwrap();
        assert_eq!((bar.position(), bar.length()), (1, Some(2)));
        counter.finish();
        assert!(bar.is_finished());
    }
}
