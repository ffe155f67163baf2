/** Change-listener bookkeeping shared by the state adapters. */
import type { StateChange, StateChangeListener } from './types.ts'

/**
 * Holds the listeners of `StateAdapter.subscribe` and reports each change to all of them. The
 * contract forbids listeners to throw; one that does anyway is skipped so that the others still
 * hear of the change and the write, which has already committed, still succeeds.
 */
export class ChangeListeners {
  private readonly listeners = new Set<StateChangeListener>()

  subscribe(listener: StateChangeListener): () => void {
    // Wrapped so that subscribing the same function twice yields two independent subscriptions.
    const entry: StateChangeListener = (change) => listener(change)
    this.listeners.add(entry)
    return () => {
      this.listeners.delete(entry)
    }
  }

  emit(change: StateChange): void {
    for (const listener of this.listeners) {
      try {
        listener(change)
      } catch {
        // Contract violation by the listener; see above.
      }
    }
  }

  clear(): void {
    this.listeners.clear()
  }
}
