/**
 * Inputs, results and events of the state worker (builtins.md §4.2–§4.3). The shapes are the ones
 * `svc-sdk/state` exports to users (sdk.md §10); the worker uses them as they are.
 */
export type {
  StateDeleteResult,
  StateEventData,
  StateEventType,
  StateGetInput as StateKeyInput,
  StateListEntriesResult,
  StateListGroupsResult,
  StateListInput,
  StateListKeysInput as StatePageInput,
  StateListKeysResult,
  StateSetInput,
  StateSetResult,
  StateTriggerConfig,
  StateUpdateInput,
  StateUpdateResult,
  UpdateOp,
  UpdateOpError,
} from 'svc-protocol'
