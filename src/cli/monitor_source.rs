//! `--monitor-source`: where the invariant monitor reads the AppWrappers' states.

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MonitorSource {
    /// Every write, from the API server's audit log, where there is one.
    AuditLog,
    /// A watch, everywhere.
    Watch,
}
