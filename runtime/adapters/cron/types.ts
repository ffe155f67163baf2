/**
 * The storage seam of the cron worker (builtins.md §9.3, §13.1): claims of schedule slots, so that
 * a slot runs at most once across everything sharing the store — replicas in one engine, engines of
 * a fleet, and an engine restarted on the same data directory.
 *
 * In the contract: `claim` is atomic; a slot is claimed at most once; a slot at or before the last
 * claimed slot of the schedule is refused (the store keeps the last slot per schedule, so a restart
 * or a clock that went back never runs a slot twice); `lockRun` excludes runs of one schedule on
 * other engines sharing the store. Not in the contract: computing slots, conditions, invoking,
 * overlap of runs within one engine (the worker serialises those).
 */

/** A store of claimed slots. Schedules are opaque ids (hex digests); slots are epoch ms. */
export interface CronSlotStore {
  /**
   * Claims `slotMs` of `schedule`: resolves true and records it as the last slot when it is later
   * than the recorded one, false otherwise.
   * @throws when the store cannot be reached; the worker skips the slot and logs it.
   */
  claim(schedule: string, slotMs: number): Promise<boolean>
  /**
   * Takes the run lock of `schedule` before a slot is claimed, so that runs of one schedule never
   * overlap across engines (§9.3). Resolves with its release function, or null when another engine
   * holds it (the slot is then skipped). In-process stores answer at once: within one engine the
   * worker already runs a schedule one slot at a time.
   * @throws when the store cannot be reached; the worker skips the slot and logs it.
   */
  lockRun(schedule: string): Promise<(() => Promise<void>) | null>
  /** The last claimed slot of `schedule`, undefined when none. */
  lastSlot(schedule: string): Promise<number | undefined>
  close(): Promise<void>
}

export interface CronStoreContext {
  /** Absolute data directory; `builtin` keeps `cron.db` there. */
  dataDir: string
}
