/**
 * The RBAC shapes of protocol.md §13 under their SDK names (sdk.md §13, §15 `svc-helpers/rbac`):
 * what the auth function of a listener receives and answers, the registration hooks' inputs and
 * results, and the middleware's input. Types only. A page rarely implements these (they run on a
 * trusted worker), but it sees their effects: `AuthResult` decides what it may register and call.
 *
 * @example
 * // On a trusted Node worker, the auth function that admits pages by a query-parameter token:
 * svc.registerFunction('gate::auth', ({ query_params }: AuthInput): AuthResult => {
 *   if (query_params.token?.[0] !== expected) throw new Error('invalid token')
 *   return { allowed_functions: ['orders::list'], context: { page: true } }
 * })
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
