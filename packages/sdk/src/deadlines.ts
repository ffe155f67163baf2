/** Grouped call timeouts: the client core's (`svc-protocol/client`). */
export { DEADLINE_SLOT_MS, Deadlines } from 'svc-protocol/client'
export type { DeadlineSlot } from 'svc-protocol/client'
