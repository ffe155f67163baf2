/** `svc-helpers/observability/internal` (sdk.md §15): tracer and meter for svc's own packages. */
export { getMeter } from './otel.ts'
export { getTracer, TRACER_NAME } from './trace.ts'
