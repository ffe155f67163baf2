/** `svc-helpers/stream` (sdk.md §10, §15): stream payload, trigger config and event types. */
export type * from 'svc-protocol/payloads/stream'
