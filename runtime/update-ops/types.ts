/**
 * Shapes of the update operations shared by `state::update`, `stream::update` and
 * `configuration::update` (builtins.md §5). The same shapes are exported to users by
 * `svc-sdk/state` and `svc-sdk/stream` (sdk.md §10), defined in `svc-protocol`.
 */

import type { MergePath, UpdateOp, UpdateOpError } from 'svc-protocol'

export type { MergePath, UpdateOp, UpdateOpError }

export type UpdateOpType = UpdateOp['type']

/** What {@link applyUpdateOps} returns: the value to store and the operations it skipped, in order. */
export interface UpdateOpsResult {
  /** Never undefined: a value still missing after the last operation is `{}`. */
  value: unknown
  errors: UpdateOpError[]
}
