/**
 * The OpenTelemetry SDK packages, loaded the first time something needs them (issue 20: telemetry
 * on by default must cost little). A worker with telemetry on records its handler spans with
 * {@link HandlerSpan} and its worker gauges with `gauges.ts`, neither of which uses the SDK; the
 * SDK's tracer, logger and meter providers are built only when code asks one of them for work —
 * a span of another tracer (`withSpan`, the traced `fetch`, an instrumentation), a `Logger`
 * record, a meter instrument. Until then `@opentelemetry/sdk-trace`, `sdk-logs`, `sdk-metrics`,
 * `resources` and `otlp-transformer` (about 140 modules) are never imported.
 *
 * The global providers registered by `initOtel` are the `Lazy*Provider`s here: each builds its
 * real provider with the factory it was given, synchronously, on first use, and forwards to it.
 *
 * @example
 * const provider = new LazyTracerProvider(() => new (sdkTrace().TracerProvider)({}))
 * trace.setGlobalTracerProvider(provider) // nothing loaded yet
 * trace.getTracer('x').startSpan('y') // loads @opentelemetry/sdk-trace, builds the provider
 */
import type { Logger, LoggerOptions, LoggerProvider, LogRecord } from '@opentelemetry/api'
import type { Meter, MeterOptions, MeterProvider, Span, Tracer, TracerOptions, TracerProvider } from '@opentelemetry/api'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)

/**
 * Loads an installed package's ES module build synchronously (Node's `require` of an ES module),
 * so it is the same module instance a static `import` of it gives: one copy of each
 * `@opentelemetry` package in the process, whether loaded early or late.
 */
function loadSync<T>(specifier: string): T {
  return require(fileURLToPath(import.meta.resolve(specifier))) as T
}

let core: typeof import('@opentelemetry/core') | undefined
/**
 * `@opentelemetry/core` (the W3C propagators; with its semantic conventions about 40 modules),
 * loaded on first call: a worker connects and registers before it loads (issue 20 "Engine start");
 * the first traced call or baggage header loads it.
 */
export const otelCore = (): typeof import('@opentelemetry/core') => (core ??= loadSync<typeof import('@opentelemetry/core')>('@opentelemetry/core'))
/** `@opentelemetry/sdk-trace`, loaded on first call. */
export const sdkTrace = (): typeof import('@opentelemetry/sdk-trace') => loadSync('@opentelemetry/sdk-trace')
/** `@opentelemetry/sdk-logs`, loaded on first call. */
export const sdkLogs = (): typeof import('@opentelemetry/sdk-logs') => loadSync('@opentelemetry/sdk-logs')
/** `@opentelemetry/sdk-metrics`, loaded on first call. */
export const sdkMetrics = (): typeof import('@opentelemetry/sdk-metrics') => loadSync('@opentelemetry/sdk-metrics')
/** `@opentelemetry/resources`, loaded on first call. */
export const sdkResources = (): typeof import('@opentelemetry/resources') => loadSync('@opentelemetry/resources')
/** `@opentelemetry/otlp-transformer` (the OTLP/JSON serializers of logs and metrics), loaded on first call. */
export const otlpTransformer = (): typeof import('@opentelemetry/otlp-transformer') => loadSync('@opentelemetry/otlp-transformer')

/** What every SDK provider has besides its `get*` method. */
interface Flushable {
  forceFlush(): Promise<unknown>
  shutdown(): Promise<unknown>
}

/** A provider built on first use by `create`; {@link built} is undefined until then. */
class Lazy<P extends Flushable> {
  readonly #create: () => P
  #provider: P | undefined

  constructor(create: () => P) {
    this.#create = create
  }

  /** The real provider, built now if it was not yet. */
  get provider(): P {
    return (this.#provider ??= this.#create())
  }

  /** The real provider if something has needed it, else undefined (nothing to flush). */
  get built(): P | undefined {
    return this.#provider
  }

  async forceFlush(): Promise<void> {
    await this.#provider?.forceFlush()
  }

  async shutdown(): Promise<void> {
    await this.#provider?.shutdown()
  }
}

/** A `TracerProvider` whose SDK provider is built at the first span started (not at `getTracer`). */
export class LazyTracerProvider<P extends TracerProvider & Flushable> extends Lazy<P> implements TracerProvider {
  getTracer(name: string, version?: string, options?: TracerOptions): Tracer {
    const real = this.built
    if (real !== undefined) return real.getTracer(name, version, options)
    let tracer: Tracer | undefined
    const get = (): Tracer => (tracer ??= this.provider.getTracer(name, version, options))
    return {
      startSpan: (spanName, spanOptions, ctx): Span => get().startSpan(spanName, spanOptions, ctx),
      startActiveSpan: ((...args: Parameters<Tracer['startActiveSpan']>) => (get().startActiveSpan as (...a: unknown[]) => unknown)(...args)) as Tracer['startActiveSpan'],
    }
  }
}

/** A `LoggerProvider` whose SDK provider is built at the first record emitted (or `enabled` asked). */
export class LazyLoggerProvider<P extends LoggerProvider & Flushable> extends Lazy<P> implements LoggerProvider {
  getLogger(name: string, version?: string, options?: LoggerOptions): Logger {
    const real = this.built
    if (real !== undefined) return real.getLogger(name, version, options)
    let logger: Logger | undefined
    const get = (): Logger => (logger ??= this.provider.getLogger(name, version, options))
    return {
      emit: (record: LogRecord): void => get().emit(record),
      enabled: (opts): boolean => get().enabled(opts),
    }
  }
}

/** A `MeterProvider` whose SDK provider is built at the first instrument created. */
export class LazyMeterProvider<P extends MeterProvider & Flushable> extends Lazy<P> implements MeterProvider {
  getMeter(name: string, version?: string, options?: MeterOptions): Meter {
    const real = this.built
    if (real !== undefined) return real.getMeter(name, version, options)
    let meter: Meter | undefined
    const get = (): Meter => (meter ??= this.provider.getMeter(name, version, options))
    return {
      createGauge: (n, o) => get().createGauge(n, o),
      createHistogram: (n, o) => get().createHistogram(n, o),
      createCounter: (n, o) => get().createCounter(n, o),
      createUpDownCounter: (n, o) => get().createUpDownCounter(n, o),
      createObservableGauge: (n, o) => get().createObservableGauge(n, o),
      createObservableCounter: (n, o) => get().createObservableCounter(n, o),
      createObservableUpDownCounter: (n, o) => get().createObservableUpDownCounter(n, o),
      addBatchObservableCallback: (cb, observables) => get().addBatchObservableCallback(cb, observables),
      removeBatchObservableCallback: (cb, observables) => get().removeBatchObservableCallback(cb, observables),
    }
  }
}
