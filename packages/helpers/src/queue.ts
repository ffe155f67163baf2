/** `svc-helpers/queue` (sdk.md §15): result of an enqueue `trigger` call (sdk.md §6). */
export interface EnqueueResult {
  /** Receipt id of the queued message. */
  messageReceiptId: string
}
