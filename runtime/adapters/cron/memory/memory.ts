/** The in-process cron slot store (`memory`, builtins.md §13.3): nothing survives a restart. */
import type { CronSlotStore } from '../types.ts'

/**
 * @example
 * const store = new MemoryCronSlotStore()
 * await store.claim('s1', 1000) // true
 * await store.claim('s1', 1000) // false
 */
export class MemoryCronSlotStore implements CronSlotStore {
  private readonly last = new Map<string, number>()

  async claim(schedule: string, slotMs: number): Promise<boolean> {
    const last = this.last.get(schedule)
    if (last !== undefined && last >= slotMs) return false
    this.last.set(schedule, slotMs)
    return true
  }

  /** One engine per store: the worker's own serialisation is the lock. */
  async lockRun(): Promise<() => Promise<void>> {
    return RELEASED
  }

  async lastSlot(schedule: string): Promise<number | undefined> {
    return this.last.get(schedule)
  }

  async close(): Promise<void> {}
}

const RELEASED = async (): Promise<void> => {}
