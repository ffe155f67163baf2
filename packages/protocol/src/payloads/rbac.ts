/**
 * Inputs and results of the functions access control calls (protocol.md §13): the auth function,
 * the middleware and the three registration hooks.
 */
import type { TriggerActionValue } from '../messages.ts'

/** Input of a listener's auth function (protocol.md §13.2). */
export interface AuthInput {
  /** Upgrade request headers, names lower-cased; repeated headers joined with `, `. */
  headers: Record<string, string>
  /** Query parameters of the upgrade URL, decoded; a key without `=` gives `[""]`. */
  query_params: Record<string, string[]>
  /** Client address. */
  ip_address: string
}

/** Result of the auth function (protocol.md §13.2); every field optional. */
export interface AuthResult {
  /** Default true. False refuses every `registerfunction`. */
  allow_function_registration?: boolean
  /** Default false. False refuses every `registertriggertype`. */
  allow_trigger_type_registration?: boolean
  /** Exact function ids in `default` this session may invoke besides `expose_functions`. */
  allowed_functions?: string[]
  /** Exact ids denied in every namespace; wins over everything. */
  forbidden_functions?: string[]
  /** Trigger types this session may bind; omitted means all. */
  allowed_trigger_types?: string[]
  /** Per-namespace id patterns this session may invoke; non-empty restricts the announce's namespace. */
  namespaces?: Record<string, string[]>
  /** Passed to the middleware and the hooks. Default `{}`. */
  context?: unknown
  /** Stored ids of the session's functions become `<prefix>::<id>`. */
  function_registration_prefix?: string
}

/** What the middleware receives instead of the call it diverts (protocol.md §13.4). */
export interface MiddlewareInput {
  function_id: string
  payload: unknown
  namespace: string
  action: TriggerActionValue | null
  context: unknown
  metadata?: unknown
}

/** Input of `on_function_registration_function_id` (protocol.md §13.5). */
export interface FunctionRegistrationHookInput {
  function_id: string
  description: string | null
  metadata: Record<string, unknown> | null
  namespace: string
  context: unknown
}

/** Input of `on_trigger_registration_function_id` (protocol.md §13.5). */
export interface TriggerRegistrationHookInput {
  trigger_id: string
  trigger_type: string
  function_id: string
  config: unknown
  metadata: unknown
  namespace: string
  context: unknown
}

/** Input of `on_trigger_type_registration_function_id` (protocol.md §13.5). */
export interface TriggerTypeRegistrationHookInput {
  trigger_type_id: string
  description: string
  context: unknown
}

/*
 * The same shapes under the names the SDKs export them by (sdk.md §13, §15 `svc-helpers/rbac`),
 * defined once here for `svc-helpers/rbac` and `svc-browser-sdk` to re-export.
 */

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
