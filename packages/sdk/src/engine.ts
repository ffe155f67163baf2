/**
 * Ids of the functions and trigger types the engine and its always-on workers serve
 * (protocol.md §11), and the shapes of the engine's listings, re-exported from `svc-protocol`.
 *
 * @example
 * import { EngineFunctions } from 'svc-sdk/engine'
 * const { functions } = await client.trigger({ function_id: EngineFunctions.LIST_FUNCTIONS, payload: {} })
 */
export { EngineFunctions, EngineTriggers } from 'svc-protocol/ids'
export type { EngineFunctionId, EngineTriggerType } from 'svc-protocol/ids'
export type { FunctionSummary, WorkerSummary } from 'svc-protocol/payloads/engine'
