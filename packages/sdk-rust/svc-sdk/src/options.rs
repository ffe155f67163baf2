//! Options of [`crate::register_worker`] (sdk.md §2, §14) and the worker metadata of the announce
//! (protocol.md §3.2).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use svc_helpers::observability::OtelConfig;
use svc_helpers::ReconnectionConfig;

/// Worker metadata for the announce (`engine::workers::register`, protocol.md §3.2). Detected by
/// [`WorkerMetadata::detect`] when [`InitOptions::metadata`] is `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerMetadata {
    /// `rust`.
    pub runtime: String,
    /// SDK version.
    pub version: String,
    /// Worker name (a label): env `SVC_WORKER_NAME`, else `<hostname>:<pid>`.
    pub name: String,
    /// One-line summary shown by `engine::workers::list`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// e.g. `linux 6.8.0 (x86_64)`.
    pub os: String,
    /// Process id.
    pub pid: u32,
    /// Env `SVC_ISOLATION`, else `null`.
    pub isolation: Option<String>,
    /// `{language, project_name, framework}`.
    pub telemetry: TelemetryOptions,
}

/// Worker metadata for analytics (sdk.md §2 `telemetry`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TelemetryOptions {
    /// `rust`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    /// Default: the working directory's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project_name: Option<String>,
    /// `svc-rust`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn hostname() -> String {
    env("HOSTNAME")
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok().map(|h| h.trim().to_string()).filter(|h| !h.is_empty()))
        .unwrap_or_else(|| "localhost".into())
}

impl WorkerMetadata {
    /// The metadata of this process: env `SVC_WORKER_NAME`, `SVC_ISOLATION`, the host, the OS.
    pub fn detect() -> Self {
        let pid = std::process::id();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").map(|r| r.trim().to_string()).unwrap_or_default();
        let os = if release.is_empty() {
            format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH)
        } else {
            format!("{} {} ({})", std::env::consts::OS, release, std::env::consts::ARCH)
        };
        let project_name = std::env::current_dir().ok().and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()));
        Self {
            runtime: "rust".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            name: env("SVC_WORKER_NAME").unwrap_or_else(|| format!("{}:{pid}", hostname())),
            description: None,
            os,
            pid,
            isolation: env("SVC_ISOLATION"),
            telemetry: TelemetryOptions { language: Some("rust".into()), project_name, framework: Some("svc-rust".into()) },
        }
    }

    /// Sets the worker name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the one-line description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// Options of [`crate::register_worker`] (sdk.md §14). All optional; the timeout of calls and the
/// reconnection are set with [`InitOptions::invocation_timeout_ms`] and
/// [`InitOptions::reconnection_config`].
///
/// ```no_run
/// use svc_sdk::{register_worker, InitOptions, ReconnectionConfig, WorkerMetadata};
/// let client = register_worker("ws://127.0.0.1:49134", InitOptions {
///     metadata: Some(WorkerMetadata::detect().name("billing")),
///     headers: None,
///     otel: None,
///     namespace: Some("payments".into()),
/// }.invocation_timeout_ms(5000))?;
/// # Ok::<(), svc_sdk::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    /// Worker metadata for the announce; detected when `None`.
    pub metadata: Option<WorkerMetadata>,
    /// Extra HTTP headers on the upgrade of `/` and `/otel` (for the listener's auth function).
    pub headers: Option<HashMap<String, String>>,
    /// Telemetry (sdk.md §12.1); on by default, `OTEL_ENABLED=false` turns it off.
    pub otel: Option<OtelConfig>,
    /// The worker's namespace: env `SVC_NAMESPACE` (empty counts as unset), else none (`default`).
    pub namespace: Option<String>,
}

/// [`InitOptions`] with the settings that have defaults of their own.
#[derive(Debug, Clone, Default)]
pub struct WorkerOptions {
    pub(crate) init: InitOptions,
    pub(crate) invocation_timeout_ms: Option<u64>,
    pub(crate) reconnection_config: Option<ReconnectionConfig>,
}

impl InitOptions {
    /// Default timeout of synchronous and enqueue calls, ms (default 30000).
    pub fn invocation_timeout_ms(self, ms: u64) -> WorkerOptions {
        WorkerOptions::from(self).invocation_timeout_ms(ms)
    }

    /// Reconnection backoff (default: sdk.md §2).
    pub fn reconnection_config(self, config: ReconnectionConfig) -> WorkerOptions {
        WorkerOptions::from(self).reconnection_config(config)
    }
}

impl WorkerOptions {
    /// Default timeout of synchronous and enqueue calls, ms.
    pub fn invocation_timeout_ms(mut self, ms: u64) -> Self {
        self.invocation_timeout_ms = Some(ms);
        self
    }

    /// Reconnection backoff.
    pub fn reconnection_config(mut self, config: ReconnectionConfig) -> Self {
        self.reconnection_config = Some(config);
        self
    }
}

impl From<InitOptions> for WorkerOptions {
    fn from(init: InitOptions) -> Self {
        WorkerOptions { init, invocation_timeout_ms: None, reconnection_config: None }
    }
}
