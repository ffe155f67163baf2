/**
 * `svc-helpers/rbac` (sdk.md §15): the shapes of protocol.md §13 under their SDK names — the
 * auth function's input and result, the registration hooks' inputs and results (§13.5), and the
 * middleware's input (§13.4).
 *
 * @example
 * client.registerFunction('auth::hook', (input: OnFunctionRegistrationInput): OnFunctionRegistrationResult =>
 *   input.function_id.startsWith('admin::') ? null : { function_id: `team::${input.function_id}` })
 */
export type {
  AuthInput,
  AuthResult,
  MiddlewareFunctionInput,
  OnFunctionRegistrationInput,
  OnFunctionRegistrationResult,
  OnTriggerRegistrationInput,
  OnTriggerRegistrationResult,
  OnTriggerTypeRegistrationInput,
  OnTriggerTypeRegistrationResult,
} from 'svc-protocol/payloads/rbac'
