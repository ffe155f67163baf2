/**
 * `svc-helpers/rbac` (sdk.md §15): the shapes of protocol.md §13 under their SDK names.
 */
import type {
  FunctionRegistrationHookInput,
  MiddlewareInput,
  TriggerRegistrationHookInput,
  TriggerTypeRegistrationHookInput,
} from 'svc-protocol/payloads/rbac'

export type { AuthInput, AuthResult } from 'svc-protocol/payloads/rbac'
export type OnFunctionRegistrationInput = FunctionRegistrationHookInput
export type OnTriggerRegistrationInput = TriggerRegistrationHookInput
export type OnTriggerTypeRegistrationInput = TriggerTypeRegistrationHookInput
export type MiddlewareFunctionInput = MiddlewareInput
