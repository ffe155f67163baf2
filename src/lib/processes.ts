/**
 * Whether a process exists, by pid: the one check behind the engine registry, the data-directory
 * lock, the worker state files, the compose daemon and the supervisor's Windows path.
 */

/**
 * True when a process with this pid exists: signal 0 is delivered (`kill(2)`), or refused with
 * `EPERM` (it exists but belongs to another user). A pid read from a file is checked first: only a
 * positive safe integer names one process, since signal 0 to `0` or a negative pid asks about a
 * whole process group (`-1`: every process), which would make a corrupt record look alive.
 *
 * @param pid the process id, as read from a record (any value; non-pids are not alive)
 * @example processAlive(process.pid) // true
 * @example processAlive(0) // false: not one process
 */
export function processAlive(pid: unknown): boolean {
  if (typeof pid !== 'number' || !Number.isSafeInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}
