/**
 * The `memory` queue backend (builtins.md §13.3): the in-process index without a journal. Same
 * semantics as `builtin` while the engine runs; nothing survives a restart.
 */
import { IndexedQueueBackend } from '../indexed.ts'

/** @example const backend = openMemoryQueue() */
export function openMemoryQueue(): IndexedQueueBackend {
  return new IndexedQueueBackend('memory')
}
