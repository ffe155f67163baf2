/**
 * Size limits of the telemetry the observability worker keeps (builtins.md §12.1, §12.4): applied
 * to every span, log record and metric point at ingest — `/otel` and main-connection frames,
 * `engine::log::*`, worker process output, the engine's own log and the built-ins' spans — before
 * the record is stored, windowed, delivered to `log` triggers or exported.
 *
 * The names follow the OpenTelemetry SDK's limits (`attributeValueLengthLimit`,
 * `attributeCountLimit`, `eventCountLimit`, `linkCountLimit`), in UTF-8 bytes instead of
 * characters, plus a log body limit and a limit on the whole record:
 *
 * - A string longer than its limit keeps its first bytes (cut on a character boundary) followed by
 *   the marker `…[truncated <n> bytes]`, the whole at most the limit; a structured value (object,
 *   array) whose JSON is longer becomes that JSON, truncated the same way. Applies to attribute
 *   values (span, event, link, log, resource, metric point) and to the other strings a sender
 *   chooses (span and event names, status message, service name, ids, scope, metric name).
 * - Attributes beyond `attribute_count_limit`, events beyond `span_event_count_limit` and links
 *   beyond `span_link_count_limit` are dropped, the first ones kept.
 * - `record_size_limit` bounds a record's estimated JSON size. The fields come first (after their
 *   own limits), a resource keeps at most a quarter of it, then the record's attributes, then each
 *   event's and each link's: an attribute that no longer fits is dropped (a later, smaller one may
 *   still fit), and an event or link is dropped when not even its name or ids fit.
 * - A record tells what it lost in the OTLP fields: `dropped_attributes_count` (spans, log
 *   records, events, links: attributes dropped or whose value was truncated),
 *   `dropped_events_count` and `dropped_links_count` (spans); present only when non-zero.
 * - {@link TelemetryLimiter.series} counts every truncation and drop by signal and limit
 *   (`svc.observability.truncated`, in `engine::metrics::list`).
 *
 * Applying the limits again to a record changes nothing (a truncated value is within its limit),
 * so an engine span finished in place is limited again with the attributes it gained.
 */
import { RECORD_FIXED_BYTES, stringSize, valueSize, type LogRecord, type MetricPoint, type MetricSeries, type SpanRecord } from '../../adapters/observability/records.ts'

/** The limits, as the `svc-observability` settings of the same names (§12.1). */
export interface TelemetryLimits {
  /** UTF-8 bytes of one attribute value (a structured value: of its JSON) and of any other string a sender chooses. */
  attribute_value_length_limit: number
  /** Attributes per span, event, link, log record, resource and metric point. */
  attribute_count_limit: number
  /** Events per span. */
  span_event_count_limit: number
  /** Links per span. */
  span_link_count_limit: number
  /** UTF-8 bytes of a log record's body. */
  log_body_length_limit: number
  /** Estimated JSON bytes of a whole span or log record. */
  record_size_limit: number
}

/**
 * Defaults: OpenTelemetry's counts (128), 64 KiB per value and per log body (a stack trace, a SQL
 * statement or an API payload fits; a dump does not), 256 KiB per record (two payload events of
 * 64 KiB and the usual attributes fit).
 */
export const DEFAULT_TELEMETRY_LIMITS: Readonly<TelemetryLimits> = Object.freeze({
  attribute_value_length_limit: 65536,
  attribute_count_limit: 128,
  span_event_count_limit: 128,
  span_link_count_limit: 128,
  log_body_length_limit: 65536,
  record_size_limit: 262144,
})

/** Smallest value limit accepted: room for a marker with any count and some text. */
export const MIN_LENGTH_LIMIT = 64
/** Smallest record limit accepted. */
export const MIN_RECORD_SIZE_LIMIT = 1024

/** Marker appended to a truncated string; `cut` is the number of UTF-8 bytes removed. */
export function truncationMarker(cut: number): string {
  return `…[truncated ${cut} bytes]`
}

const encoder = new TextEncoder()

/**
 * `text` within `limit` UTF-8 bytes: itself when it fits, else its first bytes (whole characters)
 * and {@link truncationMarker}, the whole at most `limit` bytes (`limit` ≥ {@link MIN_LENGTH_LIMIT}).
 * The kept part is a copy: a 60 MB string is not kept alive by its first 64 KiB.
 * @example truncateText('x'.repeat(100), 64) // 'xxxx…[truncated 71 bytes]' (64 bytes)
 */
export function truncateText(text: string, limit: number): string {
  // A UTF-16 code unit is at most 3 UTF-8 bytes.
  if (text.length * 3 <= limit) return text
  const bytes = Buffer.byteLength(text, 'utf8')
  if (bytes <= limit) return text
  // The marker for `bytes` is at least as long as the one for the bytes actually cut.
  const room = Math.max(0, limit - Buffer.byteLength(truncationMarker(bytes)))
  const kept = new Uint8Array(room)
  const { written } = encoder.encodeInto(text, kept)
  return Buffer.from(kept.buffer, 0, written).toString('utf8') + truncationMarker(bytes - written)
}

function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value) ?? 'null'
  } catch {
    return '[unserializable]'
  }
}

/** What one application of the limits removed from a set of attributes. */
interface Outcome {
  /** Estimated JSON bytes of what was kept. */
  size: number
  /** Values truncated. */
  truncated: number
  /** Attributes dropped by the count limit. */
  overCount: number
  /** Attributes dropped by the record budget. */
  overBudget: number
}

/** The kinds of data counted by {@link TelemetryLimiter.series}. */
export type Signal = 'spans' | 'logs' | 'metrics'

/**
 * Applies {@link TelemetryLimits} to records in place and counts what it truncated and dropped.
 * @example
 * const limiter = new TelemetryLimiter(DEFAULT_TELEMETRY_LIMITS)
 * limiter.span(span) // span.attributes['big'] now ends with '…[truncated 59934465 bytes]'
 * hub.addMetricSource((now) => limiter.series(now))
 */
export class TelemetryLimiter {
  limits: TelemetryLimits
  /** `signal\u0000limit` → count since start. */
  private readonly counts = new Map<string, number>()
  /** Resources already limited (shared by the records of one frame, or frozen engine resources), with their size. */
  private readonly resources = new WeakMap<object, number>()

  constructor(limits: TelemetryLimits) {
    this.limits = limits
  }

  /**
   * Limits a span (and its events, links and resource) in place.
   * @returns the span's estimated JSON bytes after the limits (what the observability window
   *   counts it as; measured while limiting, no second walk)
   */
  span(span: SpanRecord): number {
    const limits = this.limits
    span.name = this.text(span.name, 'spans')
    span.service_name = this.text(span.service_name, 'spans')
    if (span.status_message !== undefined) span.status_message = this.text(span.status_message, 'spans')
    let budget = limits.record_size_limit - RECORD_FIXED_BYTES - stringSize(span.trace_id) - stringSize(span.span_id) - stringSize(span.name) - stringSize(span.service_name)
    if (span.parent_span_id !== null) budget -= stringSize(span.parent_span_id)
    if (span.status_message !== undefined) budget -= stringSize(span.status_message)
    budget -= this.resource(span.resource, 'spans')

    const own = this.attributes(span.attributes, budget, 'spans')
    budget -= own.size
    let droppedAttributes = own.truncated + own.overCount + own.overBudget

    let droppedEvents = 0
    const events = span.events
    if (events.length > 0) {
      let kept = 0
      for (let i = 0; i < events.length; i++) {
        const event = events[i]!
        if (kept >= limits.span_event_count_limit) {
          droppedEvents += events.length - i
          this.count('spans', 'span_event_count_limit', events.length - i)
          break
        }
        event.name = this.text(event.name, 'spans')
        const outcome = this.attributes(event.attributes, budget - stringSize(event.name) - 64, 'spans', true)
        const size = stringSize(event.name) + 64 + outcome.size
        if (size > budget) {
          droppedEvents++
          this.count('spans', 'record_size_limit', 1)
          continue
        }
        this.countOutcome(outcome, 'spans')
        const lost = outcome.truncated + outcome.overCount + outcome.overBudget
        if (lost > 0) event.dropped_attributes_count = (event.dropped_attributes_count ?? 0) + lost
        budget -= size
        events[kept++] = event
      }
      events.length = kept
    }

    let droppedLinks = 0
    const links = span.links
    if (links.length > 0) {
      let kept = 0
      for (let i = 0; i < links.length; i++) {
        const link = links[i]!
        if (kept >= limits.span_link_count_limit) {
          droppedLinks += links.length - i
          this.count('spans', 'span_link_count_limit', links.length - i)
          break
        }
        link.trace_id = this.text(link.trace_id, 'spans')
        link.span_id = this.text(link.span_id, 'spans')
        const ids = stringSize(link.trace_id) + stringSize(link.span_id) + 64
        const outcome = this.attributes(link.attributes, budget - ids, 'spans', true)
        if (ids + outcome.size > budget) {
          droppedLinks++
          this.count('spans', 'record_size_limit', 1)
          continue
        }
        this.countOutcome(outcome, 'spans')
        const lost = outcome.truncated + outcome.overCount + outcome.overBudget
        if (lost > 0) link.dropped_attributes_count = (link.dropped_attributes_count ?? 0) + lost
        budget -= ids + outcome.size
        links[kept++] = link
      }
      links.length = kept
    }

    if (droppedAttributes > 0) span.dropped_attributes_count = (span.dropped_attributes_count ?? 0) + droppedAttributes
    if (droppedEvents > 0) span.dropped_events_count = (span.dropped_events_count ?? 0) + droppedEvents
    if (droppedLinks > 0) span.dropped_links_count = (span.dropped_links_count ?? 0) + droppedLinks
    // What was charged to the budget is what the span holds (fields that alone exceed their share
    // make the budget negative, and are counted all the same).
    return limits.record_size_limit - budget
  }

  /**
   * Limits a log record (body, attributes, resource, the strings a sender chooses) in place.
   * @returns the record's estimated JSON bytes after the limits
   */
  log(record: LogRecord): number {
    const limits = this.limits
    const body = truncateText(record.body, limits.log_body_length_limit)
    if (body !== record.body) {
      record.body = body
      this.count('logs', 'log_body_length_limit', 1)
    }
    record.service_name = this.text(record.service_name, 'logs')
    record.severity_text = this.text(record.severity_text, 'logs')
    if (record.trace_id !== null) record.trace_id = this.text(record.trace_id, 'logs')
    if (record.span_id !== null) record.span_id = this.text(record.span_id, 'logs')
    if (record.instrumentation_scope_name !== undefined) record.instrumentation_scope_name = this.text(record.instrumentation_scope_name, 'logs')
    if (record.instrumentation_scope_version !== undefined) record.instrumentation_scope_version = this.text(record.instrumentation_scope_version, 'logs')
    let budget = limits.record_size_limit - RECORD_FIXED_BYTES - stringSize(record.body) - stringSize(record.service_name) - stringSize(record.severity_text)
    budget -= this.resource(record.resource, 'logs')
    const outcome = this.attributes(record.attributes, budget, 'logs')
    const lost = outcome.truncated + outcome.overCount + outcome.overBudget
    if (lost > 0) record.dropped_attributes_count = (record.dropped_attributes_count ?? 0) + lost
    // Ids and scope are outside the budget (each within the value limit) but part of the record.
    let extra = 0
    if (record.trace_id !== null) extra += stringSize(record.trace_id)
    if (record.span_id !== null) extra += stringSize(record.span_id)
    if (record.instrumentation_scope_name !== undefined) extra += stringSize(record.instrumentation_scope_name)
    if (record.instrumentation_scope_version !== undefined) extra += stringSize(record.instrumentation_scope_version)
    return limits.record_size_limit - budget + outcome.size + extra
  }

  /** Limits a metric point's attributes and its series' name, unit and description in place. */
  point(series: Omit<MetricSeries, 'points'>, point: MetricPoint): void {
    series.name = this.text(series.name, 'metrics')
    if (series.unit !== undefined) series.unit = this.text(series.unit, 'metrics')
    if (series.description !== undefined) series.description = this.text(series.description, 'metrics')
    this.attributes(point.attributes, this.limits.record_size_limit, 'metrics')
  }

  /**
   * `svc.observability.truncated` (sum since start, `{item}`): values truncated and items dropped,
   * by `svc.telemetry.signal` (`spans`, `logs`, `metrics`) and `svc.telemetry.limit` (the setting
   * that applied). No series before the first truncation.
   */
  series(now: number): MetricSeries[] {
    if (this.counts.size === 0) return []
    const points = [...this.counts].map(([key, value]) => {
      const [signal, limit] = key.split('\u0000')
      return { time_unix_nano: now, value, attributes: { 'svc.telemetry.signal': signal, 'svc.telemetry.limit': limit } }
    })
    return [{ name: 'svc.observability.truncated', type: 'sum', unit: '{item}', description: 'telemetry values truncated and items dropped by the size limits', points }]
  }

  /** Truncations and drops counted so far, by signal and limit (tests, health). */
  totals(): Record<string, number> {
    return Object.fromEntries([...this.counts].map(([key, value]) => [key.replace('\u0000', '.'), value]))
  }

  private count(signal: Signal, limit: keyof TelemetryLimits, n: number): void {
    const key = `${signal}\u0000${limit}`
    this.counts.set(key, (this.counts.get(key) ?? 0) + n)
  }

  private countOutcome(outcome: Outcome, signal: Signal): void {
    if (outcome.truncated > 0) this.count(signal, 'attribute_value_length_limit', outcome.truncated)
    if (outcome.overCount > 0) this.count(signal, 'attribute_count_limit', outcome.overCount)
    if (outcome.overBudget > 0) this.count(signal, 'record_size_limit', outcome.overBudget)
  }

  /** A sender-chosen string within `attribute_value_length_limit` (counted when truncated). */
  private text(value: string, signal: Signal): string {
    if (typeof value !== 'string') return value
    const limited = truncateText(value, this.limits.attribute_value_length_limit)
    if (limited !== value) this.count(signal, 'attribute_value_length_limit', 1)
    return limited
  }

  /**
   * Limits a resource once (values, count, a quarter of the record size; frozen ones are the
   * engine's own); its estimated size.
   */
  private resource(resource: Record<string, string>, signal: Signal): number {
    const known = this.resources.get(resource)
    if (known !== undefined) return known
    let size = 2
    if (Object.isFrozen(resource)) {
      for (const key in resource) size += stringSize(key) + stringSize(resource[key]!) + 2
    } else {
      size = this.attributes(resource, Math.floor(this.limits.record_size_limit / 4), signal).size
    }
    this.resources.set(resource, size)
    return size
  }

  /**
   * Limits a set of attributes in place within `budget` estimated bytes: values truncated, those
   * beyond the count limit or the budget dropped (in order). Counted unless `deferCount` (an event
   * or link that may itself be dropped whole).
   */
  private attributes(attributes: Record<string, unknown>, budget: number, signal: Signal, deferCount = false): Outcome {
    const limits = this.limits
    const max = limits.attribute_value_length_limit
    const outcome: Outcome = { size: 2, truncated: 0, overCount: 0, overBudget: 0 }
    let kept = 0
    for (const key in attributes) {
      if (kept >= limits.attribute_count_limit) {
        delete attributes[key]
        outcome.overCount++
        continue
      }
      if (key.length * 3 > max && Buffer.byteLength(key) > max) {
        // Keys are not rewritten (a shortened key could collide with another): the attribute goes.
        delete attributes[key]
        outcome.truncated++
        continue
      }
      const value = attributes[key]
      let limited = value
      let size: number
      if (typeof value === 'string') {
        limited = truncateText(value, max)
        size = stringSize(limited as string)
      } else if (typeof value === 'object' && value !== null) {
        size = valueSize(value, max)
        if (size > max) {
          limited = truncateText(jsonText(value), max)
          size = stringSize(limited as string)
        }
      } else {
        size = valueSize(value, max)
      }
      const cost = stringSize(key) + size + 2
      if (outcome.size + cost > budget) {
        delete attributes[key]
        outcome.overBudget++
        continue
      }
      if (limited !== value) {
        attributes[key] = limited
        outcome.truncated++
      }
      outcome.size += cost
      kept++
    }
    if (!deferCount) this.countOutcome(outcome, signal)
    return outcome
  }
}
