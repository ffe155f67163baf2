/**
 * Shapes of the update operations shared by `state::update`, `stream::update` and
 * `configuration::update` (builtins.md §5). The same shapes are exported to users by
 * `svc-sdk/state` and `svc-sdk/stream` (sdk.md §10).
 */

/**
 * Where an operation applies (builtins.md §5.1): omitted, `""` or `[]` is the root value; a string
 * is one first-level field (dots are ordinary characters); an array is nested fields, one literal
 * segment per element. Named `MergePath` as in sdk.md §10, although every operation takes it.
 */
export type MergePath = string | string[]

/** One update operation (builtins.md §5.2). */
export type UpdateOp =
  | { type: 'set'; path?: MergePath; value: unknown }
  | { type: 'merge'; path?: MergePath; value: Record<string, unknown> }
  | { type: 'increment'; path?: MergePath; by?: number }
  | { type: 'decrement'; path?: MergePath; by?: number }
  | { type: 'append'; path?: MergePath; value: unknown }
  | { type: 'remove'; path?: MergePath }

export type UpdateOpType = UpdateOp['type']

/**
 * A skipped operation (builtins.md §5.3). `op_index` is the zero-based index in the submitted
 * array; `code` is `<op>.<reason>` (for example `increment.not_number`); `message` names the path.
 */
export interface UpdateOpError {
  op_index: number
  code: string
  message: string
  doc_url?: string
}

/** What {@link applyUpdateOps} returns: the value to store and the operations it skipped, in order. */
export interface UpdateOpsResult {
  /** Never undefined: a value still missing after the last operation is `{}`. */
  value: unknown
  errors: UpdateOpError[]
}
