//! `Logger` (sdk.md §12.4): OpenTelemetry log records linked to the active trace.

use opentelemetry::logs::{AnyValue, LogRecord as _, Logger as _, LoggerProvider as _, Severity};
use serde_json::Value;

use super::{current_span_id, current_trace_id, internal, json_to_log_value, redact};

/// Emits OTel log records: body = message, severity DEBUG/INFO/WARN/ERROR (5/9/13/17), attributes
/// `trace_id` and `span_id` (the constructor's values, else the active span's), `service.name`,
/// and `log.data` = `data` (redacted). Records reach `engine::logs::list` and `log` triggers. With
/// telemetry off, lines go to standard error instead.
///
/// ```no_run
/// use svc_helpers::observability::Logger;
/// let log = Logger::new(None, None, None);
/// log.info("order placed", Some(serde_json::json!({ "order": 42 })));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Logger {
    trace_id: Option<String>,
    service_name: Option<String>,
    span_id: Option<String>,
}

/// A [`Logger`] without fixed ids (the active span's are used).
pub fn get_logger() -> Logger {
    Logger::default()
}

impl Logger {
    /// A logger; `None` fields come from the active span (ids) or the telemetry config (service name).
    pub fn new(trace_id: Option<String>, service_name: Option<String>, span_id: Option<String>) -> Self {
        Self { trace_id, service_name, span_id }
    }

    /// A DEBUG (5) record.
    pub fn debug(&self, message: &str, data: Option<Value>) {
        self.emit(Severity::Debug, "DEBUG", message, data);
    }

    /// An INFO (9) record.
    pub fn info(&self, message: &str, data: Option<Value>) {
        self.emit(Severity::Info, "INFO", message, data);
    }

    /// A WARN (13) record.
    pub fn warn(&self, message: &str, data: Option<Value>) {
        self.emit(Severity::Warn, "WARN", message, data);
    }

    /// An ERROR (17) record.
    pub fn error(&self, message: &str, data: Option<Value>) {
        self.emit(Severity::Error, "ERROR", message, data);
    }

    fn emit(&self, severity: Severity, text: &'static str, message: &str, data: Option<Value>) {
        let Some((provider, configured_name)) = internal::logger_provider() else {
            match data {
                Some(d) => eprintln!("[{text}] {message} {}", redact(&d)),
                None => eprintln!("[{text}] {message}"),
            }
            return;
        };
        let logger = provider.logger(super::TRACER_NAME);
        let mut record = logger.create_log_record();
        record.set_timestamp(std::time::SystemTime::now());
        record.set_observed_timestamp(std::time::SystemTime::now());
        record.set_severity_number(severity);
        record.set_severity_text(text);
        record.set_body(AnyValue::String(message.to_string().into()));
        if let Some(id) = self.trace_id.clone().or_else(current_trace_id) {
            record.add_attribute("trace_id", id);
        }
        if let Some(id) = self.span_id.clone().or_else(current_span_id) {
            record.add_attribute("span_id", id);
        }
        record.add_attribute("service.name", self.service_name.clone().unwrap_or(configured_name));
        if let Some(d) = data {
            record.add_attribute("log.data", json_to_log_value(&redact(&d)));
        }
        logger.emit(record);
    }
}
