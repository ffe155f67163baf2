/**
 * A real OTLP receiver for tests (builtins.md §12.8): HTTP (`/v1/traces|logs|metrics`, protobuf
 * or JSON bodies) and gRPC (the three collector `Export` services) on 127.0.0.1, port 0.
 *
 * Protobuf bodies are decoded with the classes protobufjs generated from the official
 * opentelemetry-proto definitions (shipped in `@opentelemetry/otlp-transformer@0.57`, installed
 * as the dev dependency `otlp-proto-definitions`). Whatever arrives is normalised into
 * {@link ReceivedSpan}, {@link ReceivedLog} and {@link ReceivedMetric} so that tests can check it
 * span by span, whatever the protocol was.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createRequire } from 'node:module'
import * as grpc from '@grpc/grpc-js'

const require = createRequire(import.meta.url)
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const root: any = require('otlp-proto-definitions/build/src/generated/root.js')
const collector = root.opentelemetry.proto.collector

export interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  /** OTLP span kind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number
  service: string
  attributes: Record<string, unknown>
  /** 0 unset, 1 ok, 2 error. */
  statusCode: number
  statusMessage: string
  startTimeUnixNano: bigint
  endTimeUnixNano: bigint
  droppedAttributesCount: number
  droppedEventsCount: number
  /** `droppedAttributesCount` of each event. */
  eventsDroppedAttributes: number[]
}

export interface ReceivedLog {
  body: unknown
  severityNumber: number
  severityText: string
  traceId: string
  spanId: string
  service: string
  attributes: Record<string, unknown>
  droppedAttributesCount: number
}

export interface ReceivedMetric {
  name: string
  type: 'sum' | 'gauge' | 'histogram' | 'other'
  service: string
  points: Array<{ attributes: Record<string, unknown>; value: number | { count: number; sum: number } }>
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>` of the HTTP receiver. */
  httpUrl: string
  /** `http://127.0.0.1:<port>` of the gRPC receiver. */
  grpcUrl: string
  spans: ReceivedSpan[]
  logs: ReceivedLog[]
  metrics: ReceivedMetric[]
  /** Requests seen: `<transport> <signal> <content-type>` (`http traces application/x-protobuf`). */
  requests: string[]
  /**
   * Answers the next `n` requests whose description (see {@link OtlpReceiver.requests}) starts with
   * `prefix` with a non-retryable failure (HTTP 400, gRPC INVALID_ARGUMENT).
   */
  failNext(n: number, prefix?: string): void
  /** Requests refused so far (by {@link OtlpReceiver.failNext}). */
  refused: number
  /**
   * HTTP only: from now on, requests whose description starts with `prefix` are recorded as they
   * arrive but answered only once the returned function is called (a backend that is slow to
   * answer). {@link OtlpReceiver.held} counts those waiting.
   */
  hold(prefix: string): () => void
  /** Requests waiting for their answer (see {@link OtlpReceiver.hold}). */
  held: number
  /** Headers (HTTP) or metadata (gRPC) of the last request. */
  lastHeaders: Record<string, string>
  close(): Promise<void>
}

const SIGNALS = {
  traces: { request: collector.trace.v1.ExportTraceServiceRequest, response: collector.trace.v1.ExportTraceServiceResponse, service: 'opentelemetry.proto.collector.trace.v1.TraceService' },
  logs: { request: collector.logs.v1.ExportLogsServiceRequest, response: collector.logs.v1.ExportLogsServiceResponse, service: 'opentelemetry.proto.collector.logs.v1.LogsService' },
  metrics: { request: collector.metrics.v1.ExportMetricsServiceRequest, response: collector.metrics.v1.ExportMetricsServiceResponse, service: 'opentelemetry.proto.collector.metrics.v1.MetricsService' },
} as const
type Signal = keyof typeof SIGNALS

/** Starts both receivers. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  let failing = 0
  let failingPrefix = ''
  /** Prefix of the requests answered late, and the answers waiting. */
  let holding: string | undefined
  const waiting: Array<() => void> = []
  const receiver: OtlpReceiver = {
    httpUrl: '',
    grpcUrl: '',
    spans: [],
    logs: [],
    metrics: [],
    requests: [],
    lastHeaders: {},
    refused: 0,
    failNext: (n, prefix = '') => {
      failing = n
      failingPrefix = prefix
    },
    held: 0,
    hold: (prefix) => {
      holding = prefix
      return () => {
        holding = undefined
        receiver.held = 0
        for (const answer of waiting.splice(0)) answer()
      }
    },
    close: async () => {},
  }
  /** Takes a request in (normalised) unless it must fail; returns whether it was accepted. */
  const take = (signal: Signal, message: unknown): boolean => {
    if (failing > 0 && receiver.requests.at(-1)!.startsWith(failingPrefix)) {
      failing--
      receiver.refused++
      return false
    }
    if (signal === 'traces') receiver.spans.push(...spansOf(message))
    else if (signal === 'logs') receiver.logs.push(...logsOf(message))
    else receiver.metrics.push(...metricsOf(message))
    return true
  }

  const http: Server = createServer((req, res) => {
    void (async () => {
      const signal = /^\/v1\/(traces|logs|metrics)$/.exec(req.url ?? '')?.[1] as Signal | undefined
      const body = await read(req)
      if (req.method !== 'POST' || signal === undefined) {
        res.writeHead(404).end()
        return
      }
      const type = String(req.headers['content-type'] ?? '')
      receiver.requests.push(`http ${signal} ${type}`)
      receiver.lastHeaders = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]))
      if (holding !== undefined && receiver.requests.at(-1)!.startsWith(holding)) {
        receiver.held++
        await new Promise<void>((resolve) => waiting.push(resolve))
      }
      const json = type.startsWith('application/json')
      let message: unknown
      try {
        message = json ? fromJson(JSON.parse(body.toString('utf8'))) : SIGNALS[signal].request.toObject(SIGNALS[signal].request.decode(body), { longs: String, arrays: true })
      } catch (error) {
        res.writeHead(400).end(String(error))
        return
      }
      if (!take(signal, message)) {
        res.writeHead(400, { 'content-type': 'text/plain' }).end('refused by the test receiver')
        return
      }
      if (json) res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end(Buffer.from(SIGNALS[signal].response.encode({}).finish()))
    })()
  })
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve))
  receiver.httpUrl = `http://127.0.0.1:${(http.address() as AddressInfo).port}`

  const server = new grpc.Server()
  for (const signal of Object.keys(SIGNALS) as Signal[]) {
    const { request, response, service } = SIGNALS[signal]
    const definition: grpc.ServiceDefinition = {
      Export: {
        path: `/${service}/Export`,
        requestStream: false,
        responseStream: false,
        requestSerialize: (m: unknown) => Buffer.from(request.encode(m).finish()),
        requestDeserialize: (b: Buffer) => request.decode(b),
        responseSerialize: (m: unknown) => Buffer.from(response.encode(m).finish()),
        responseDeserialize: (b: Buffer) => response.decode(b),
        originalName: 'export',
      },
    }
    server.addService(definition, {
      Export: (call: grpc.ServerUnaryCall<unknown, unknown>, done: grpc.sendUnaryData<unknown>) => {
        receiver.requests.push(`grpc ${signal} application/grpc`)
        receiver.lastHeaders = Object.fromEntries(Object.entries(call.metadata.getMap()).map(([k, v]) => [k, String(v)]))
        const message = request.toObject(call.request, { longs: String, arrays: true })
        if (!take(signal, message)) done({ code: grpc.status.INVALID_ARGUMENT, details: 'refused by the test receiver' })
        else done(null, {})
      },
    })
  }
  const grpcPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))),
  )
  receiver.grpcUrl = `http://127.0.0.1:${grpcPort}`
  receiver.close = async () => {
    for (const answer of waiting.splice(0)) answer()
    server.forceShutdown()
    http.closeAllConnections()
    await new Promise<void>((resolve) => http.close(() => resolve()))
  }
  return receiver
}

async function read(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

// --- normalisation ------------------------------------------------------------------------------

type Any = Record<string, unknown>

/** OTLP/JSON has hex ids and the same field names as protobufjs objects; nothing else to do. */
function fromJson(message: unknown): unknown {
  return message
}

const hex = (v: unknown): string => (v instanceof Uint8Array ? Buffer.from(v).toString('hex') : typeof v === 'string' ? v : '')
const big = (v: unknown): bigint => (v === undefined || v === null || v === '' ? 0n : BigInt(v as string))

function valueOf(v: Any | undefined): unknown {
  if (v === undefined || v === null) return undefined
  if ('stringValue' in v) return v.stringValue
  if ('boolValue' in v) return v.boolValue
  if ('intValue' in v) return Number(v.intValue)
  if ('doubleValue' in v) return v.doubleValue
  if ('arrayValue' in v) return (((v.arrayValue as Any).values as Any[]) ?? []).map(valueOf)
  if ('kvlistValue' in v) return attributesOf((v.kvlistValue as Any).values as Any[])
  if ('bytesValue' in v) return hex(v.bytesValue)
  return undefined
}

/** Attributes as a map without a prototype: a key `__proto__` stays an attribute. */
function attributesOf(list: Any[] | undefined): Record<string, unknown> {
  const out = Object.create(null) as Record<string, unknown>
  for (const kv of list ?? []) out[kv.key as string] = valueOf(kv.value as Any)
  return out
}

function serviceOf(resource: Any | undefined): string {
  return String(attributesOf(resource?.attributes as Any[])['service.name'] ?? '')
}

function spansOf(message: unknown): ReceivedSpan[] {
  const out: ReceivedSpan[] = []
  for (const rs of ((message as Any).resourceSpans as Any[]) ?? []) {
    const service = serviceOf(rs.resource as Any)
    for (const ss of (rs.scopeSpans as Any[]) ?? [])
      for (const s of (ss.spans as Any[]) ?? []) {
        const status = (s.status ?? {}) as Any
        out.push({
          traceId: hex(s.traceId),
          spanId: hex(s.spanId),
          parentSpanId: hex(s.parentSpanId),
          name: String(s.name),
          kind: Number(s.kind ?? 0),
          service,
          attributes: attributesOf(s.attributes as Any[]),
          statusCode: Number(status.code ?? 0),
          statusMessage: String(status.message ?? ''),
          startTimeUnixNano: big(s.startTimeUnixNano),
          endTimeUnixNano: big(s.endTimeUnixNano),
          droppedAttributesCount: Number(s.droppedAttributesCount ?? 0),
          droppedEventsCount: Number(s.droppedEventsCount ?? 0),
          eventsDroppedAttributes: ((s.events as Any[]) ?? []).map((e) => Number(e.droppedAttributesCount ?? 0)),
        })
      }
  }
  return out
}

function logsOf(message: unknown): ReceivedLog[] {
  const out: ReceivedLog[] = []
  for (const rl of ((message as Any).resourceLogs as Any[]) ?? []) {
    const service = serviceOf(rl.resource as Any)
    for (const sl of (rl.scopeLogs as Any[]) ?? [])
      for (const l of (sl.logRecords as Any[]) ?? [])
        out.push({
          body: valueOf(l.body as Any),
          severityNumber: Number(l.severityNumber ?? 0),
          severityText: String(l.severityText ?? ''),
          traceId: hex(l.traceId),
          spanId: hex(l.spanId),
          service,
          attributes: attributesOf(l.attributes as Any[]),
          droppedAttributesCount: Number(l.droppedAttributesCount ?? 0),
        })
  }
  return out
}

function metricsOf(message: unknown): ReceivedMetric[] {
  const out: ReceivedMetric[] = []
  for (const rm of ((message as Any).resourceMetrics as Any[]) ?? []) {
    const service = serviceOf(rm.resource as Any)
    for (const sm of (rm.scopeMetrics as Any[]) ?? [])
      for (const m of (sm.metrics as Any[]) ?? []) {
        const kind = m.sum ? 'sum' : m.gauge ? 'gauge' : m.histogram ? 'histogram' : 'other'
        const data = (m.sum ?? m.gauge ?? m.histogram ?? {}) as Any
        const points = ((data.dataPoints as Any[]) ?? []).map((p) => ({
          attributes: attributesOf(p.attributes as Any[]),
          value: kind === 'histogram' ? { count: Number(p.count ?? 0), sum: Number(p.sum ?? 0) } : Number(p.asDouble ?? p.asInt ?? 0),
        }))
        out.push({ name: String(m.name), type: kind, service, points })
      }
  }
  return out
}
