/** Change-listener bookkeeping shared by the state and stream adapters. */

/**
 * Holds the listeners of an adapter's `subscribe` (`StateAdapter`, `StreamAdapter`) and reports
 * each change to all of them. The contract forbids listeners to throw; one that does anyway is
 * skipped so that the others still hear of the change and the write, which has already committed,
 * still succeeds.
 * @example
 * const changes = new ChangeListeners<StateChange>()
 * const unsubscribe = changes.subscribe((change) => console.log(change.key))
 * changes.emit({ scope: 'users', key: 'u1', old_value: undefined, new_value: { name: 'Ada' } })
 */
export class ChangeListeners<Change> {
  private readonly listeners = new Set<(change: Change) => void>()

  subscribe(listener: (change: Change) => void): () => void {
    // Wrapped so that subscribing the same function twice yields two independent subscriptions.
    const entry = (change: Change) => listener(change)
    this.listeners.add(entry)
    return () => {
      this.listeners.delete(entry)
    }
  }

  emit(change: Change): void {
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
