/**
 * `svc-helpers/rbac` (sdk.md §15): the shapes of protocol.md §13 under their SDK names — the
 * auth function's input and result, the registration hooks' inputs and results (§13.5), and the
 * middleware's input (§13.4).
 *
 * @example
 * client.registerFunction('auth::hook', (input: OnFunctionRegistrationInput): OnFunctionRegistrationResult =>
 *   input.function_id.startsWith('admin::') ? null : { function_id: `team::${input.function_id}` })
 */
import type {
  FunctionRegistrationHookInput,
  MiddlewareInput,
  TriggerRegistrationHookInput,
  TriggerTypeRegistrationHookInput,
} from 'svc-protocol/payloads/rbac'

export type { AuthInput, AuthResult } from 'svc-protocol/payloads/rbac'

/** Input of `on_function_registration_function_id` (protocol.md §13.5). */
export type OnFunctionRegistrationInput = FunctionRegistrationHookInput
/** Input of `on_trigger_registration_function_id`. */
export type OnTriggerRegistrationInput = TriggerRegistrationHookInput
/** Input of `on_trigger_type_registration_function_id`. */
export type OnTriggerTypeRegistrationInput = TriggerTypeRegistrationHookInput
/** Input of the listener's RBAC middleware (protocol.md §13.4). */
export type MiddlewareFunctionInput = MiddlewareInput

/**
 * Result of a registration hook: an object allows the registration, with any returned field
 * replacing the one sent (`{}` keeps everything); `null` (or an error) refuses it (protocol.md §13.5).
 */
export type OnFunctionRegistrationResult = { function_id?: string; description?: string; metadata?: Record<string, unknown> } | null
/** Result of the trigger registration hook; mappable fields as protocol.md §13.5. */
export type OnTriggerRegistrationResult = { trigger_id?: string; trigger_type?: string; function_id?: string; config?: unknown } | null
/** Result of the trigger type registration hook; mappable fields as protocol.md §13.5. */
export type OnTriggerTypeRegistrationResult = { trigger_type_id?: string; description?: string } | null
