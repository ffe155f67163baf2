/** Update operations shared by the state, stream and configuration workers (builtins.md §5). */
export { applyUpdateOps, assertUpdateOps, UPDATE_LIMITS } from './update-ops.ts'
export type { UpdateOp, UpdateOpError, UpdateOpsResult, UpdateOpType, MergePath } from './types.ts'
