/**
 * The engine's per-call index is the one the client core uses too: `CallIndex` of
 * `svc-protocol/call-index` (packages/protocol/src/call-index.ts, where it is described), so the
 * engine and the SDKs let a settled call's objects die young the same way.
 */
export { CallIndex } from 'svc-protocol/call-index'
