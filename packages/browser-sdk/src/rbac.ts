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
