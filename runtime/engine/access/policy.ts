/**
 * Access control decisions (protocol.md §13): what one session may register and invoke.
 *
 * A listener without `rbac` gives every connection {@link PERMISSIVE}. A listener with `rbac`
 * compiles its `expose_functions` rules once ({@link ListenerAccess}); each connection then gets an
 * {@link AccessPolicy} built from the listener's rules and the auth function's `AuthResult`
 * (defaults when the listener has no auth function). Every decision is a few set and pattern
 * lookups: nothing is compiled per invocation.
 */
import { canonicalJson } from 'svc-protocol/json'
import { Errors, idProblem, INFRASTRUCTURE_FUNCTIONS, type AuthResult, type SvcError } from 'svc-protocol'
import type { ExposeRule, RbacConfig } from '../config.ts'
import { compilePattern, unwrapMatch, type IdPattern } from './patterns.ts'

/** One compiled `expose_functions` rule (§13.3). */
interface CompiledRule {
  /** Namespace the rule applies to; rules without one apply to `default` only. */
  readonly namespace: string
  readonly pattern?: IdPattern
  /** Metadata rule: every key must be present and equal, or match a `match("…")` pattern. */
  readonly metadata?: ReadonlyArray<readonly [key: string, expected: { equals: string } | { pattern: IdPattern }]>
}

/** The rules of one listener's `rbac` block and `middleware_function_id`, compiled once. */
export class ListenerAccess {
  readonly rbac: RbacConfig
  readonly middlewareFunctionId: string | undefined
  private readonly rules: CompiledRule[]

  /** @throws Error naming the rule when an `expose_functions` rule cannot be compiled. */
  constructor(rbac: RbacConfig, middlewareFunctionId?: string) {
    this.rbac = rbac
    this.middlewareFunctionId = middlewareFunctionId
    this.rules = rbac.expose_functions.map(compileRule)
  }

  /** True when an `expose_functions` rule for `namespace` allows `id` (§13.3 step 5). */
  exposes(id: string, namespace: string, metadata: Record<string, unknown> | undefined): boolean {
    for (const rule of this.rules) {
      if (rule.namespace !== namespace) continue
      if (rule.pattern) {
        if (rule.pattern.test(id)) return true
        continue
      }
      if (metadata === undefined || metadata === null) continue
      let all = true
      for (const [key, expected] of rule.metadata!) {
        if (!Object.hasOwn(metadata, key)) {
          all = false
          break
        }
        const actual = metadata[key]
        if ('pattern' in expected) {
          if (typeof actual !== 'string' || !expected.pattern.test(actual)) {
            all = false
            break
          }
        } else if (canonicalJson(actual) !== expected.equals) {
          all = false
          break
        }
      }
      if (all) return true
    }
    return false
  }
}

function compileRule(rule: ExposeRule): CompiledRule {
  if (typeof rule === 'string') {
    const pattern = unwrapMatch(rule)
    if (pattern === undefined) throw new Error(`expose_functions rule '${rule}' is not a pattern or match("…")`)
    return { namespace: 'default', pattern: compilePattern(pattern) }
  }
  const namespace = rule.namespace ?? 'default'
  if ('match' in rule) return { namespace, pattern: compilePattern(rule.match) }
  const metadata = Object.entries(rule.metadata).map(([key, value]) => {
    if (typeof value === 'string') {
      const m = /^match\((["'])(.*)\1\)$/.exec(value.trim())
      if (m) return [key, { pattern: compilePattern(m[2]!) }] as const
    }
    return [key, { equals: canonicalJson(value) }] as const
  })
  return { namespace, metadata }
}


/**
 * What one session may do. `restricted` is false only for {@link PERMISSIVE}; the pipeline skips
 * every check then, so listeners without `rbac` pay nothing.
 */
export class AccessPolicy {
  readonly restricted: boolean
  readonly listener: ListenerAccess | undefined
  readonly allowFunctionRegistration: boolean
  readonly allowTriggerTypeRegistration: boolean
  /** Trigger types the session may bind; undefined: all. */
  readonly allowedTriggerTypes: ReadonlySet<string> | undefined
  /** `AuthResult.context`, passed to the middleware and the hooks. */
  readonly context: unknown
  /** `<prefix>::` prepended to the ids this session registers, or undefined. */
  readonly prefix: string | undefined
  /** Namespaces the session may announce besides `default`; undefined: any. */
  readonly permittedNamespaces: readonly string[] | undefined
  private readonly allowed: ReadonlySet<string>
  private readonly forbidden: ReadonlySet<string>
  private readonly grants: ReadonlyMap<string, IdPattern[]>

  constructor(listener: ListenerAccess | undefined, result: AuthResult = {}) {
    this.restricted = listener !== undefined
    this.listener = listener
    this.allowFunctionRegistration = result.allow_function_registration ?? true
    this.allowTriggerTypeRegistration = listener === undefined ? true : (result.allow_trigger_type_registration ?? false)
    this.allowedTriggerTypes = result.allowed_trigger_types === undefined ? undefined : new Set(result.allowed_trigger_types)
    this.context = result.context ?? {}
    this.prefix = result.function_registration_prefix
    this.allowed = new Set(result.allowed_functions ?? [])
    this.forbidden = new Set(result.forbidden_functions ?? [])
    const grants = new Map<string, IdPattern[]>()
    for (const [namespace, patterns] of Object.entries(result.namespaces ?? {})) grants.set(namespace, patterns.map(compilePattern))
    this.grants = grants
    this.permittedNamespaces = grants.size > 0 ? ['default', ...grants.keys()] : undefined
  }

  /** `middleware_function_id` of the session's listener (§13.4). */
  get middlewareFunctionId(): string | undefined {
    return this.listener?.middlewareFunctionId
  }

  /**
   * The access check of §13.3 for invoking `id` (after resolution) in `namespace`: undefined when
   * allowed, else the FORBIDDEN error to answer with.
   */
  checkInvoke(id: string, namespace: string, metadata: Record<string, unknown> | undefined): SvcError | undefined {
    if (!this.restricted) return undefined
    if (this.forbidden.has(id)) return Errors.forbiddenListed(id)
    const granted = this.grants.get(namespace)
    if (granted !== undefined && granted.some((p) => p.test(id))) return undefined
    if (namespace === 'default' && this.allowed.has(id)) return undefined
    if (INFRASTRUCTURE_FUNCTIONS.has(id)) return undefined
    if (this.listener!.exposes(id, namespace, metadata)) return undefined
    return namespace === 'default' ? Errors.forbiddenNotExposed(id) : Errors.forbiddenInNamespace(id, namespace)
  }

  /** True when listings may show `id` in `namespace` to this session (§11: listings are filtered). */
  canSee(id: string, namespace: string, metadata: Record<string, unknown> | undefined): boolean {
    return this.checkInvoke(id, namespace, metadata) === undefined
  }

  /** FORBIDDEN when the session may not announce `namespace` (§3.2, §13.2), else undefined. */
  checkNamespace(namespace: string): SvcError | undefined {
    const permitted = this.permittedNamespaces
    if (permitted === undefined || permitted.includes(namespace)) return undefined
    return Errors.forbiddenNamespace(namespace, permitted)
  }

  /** FORBIDDEN when the session may not bind triggers of `type` (§13.2). */
  checkTriggerType(type: string): SvcError | undefined {
    if (this.allowedTriggerTypes === undefined || this.allowedTriggerTypes.has(type)) return undefined
    return Errors.forbiddenTriggerType(type)
  }

  /** `id` as stored for this session: `<prefix>::<id>` when the session has a prefix (§13.2). */
  stored(id: string): string {
    return this.prefix === undefined ? id : `${this.prefix}::${id}`
  }
}

/** The session of every connection on a listener without `rbac` (§13.1). */
export const PERMISSIVE = new AccessPolicy(undefined)

/**
 * Reads an auth function's result (§13.2). Absent fields take their defaults.
 * @returns the AuthResult, or a message for `invalid auth result: <detail>`.
 */
export function readAuthResult(value: unknown): AuthResult | string {
  if (value === undefined || value === null) return 'no result'
  if (typeof value !== 'object' || Array.isArray(value)) return 'the result must be an object'
  const v = value as Record<string, unknown>
  const result: AuthResult = {}
  for (const key of ['allow_function_registration', 'allow_trigger_type_registration'] as const) {
    if (v[key] === undefined || v[key] === null) continue
    if (typeof v[key] !== 'boolean') return `${key} must be a boolean`
    result[key] = v[key]
  }
  for (const key of ['allowed_functions', 'forbidden_functions', 'allowed_trigger_types'] as const) {
    if (v[key] === undefined || v[key] === null) continue
    if (!isStringArray(v[key])) return `${key} must be an array of strings`
    result[key] = v[key]
  }
  if (v.namespaces !== undefined && v.namespaces !== null) {
    if (typeof v.namespaces !== 'object' || Array.isArray(v.namespaces)) return 'namespaces must be an object of string arrays'
    const namespaces: Record<string, string[]> = {}
    for (const [namespace, patterns] of Object.entries(v.namespaces)) {
      if (namespace.trim() === '') return 'namespaces keys must not be blank'
      if (!isStringArray(patterns)) return `namespaces.${namespace} must be an array of strings`
      namespaces[namespace] = patterns
    }
    result.namespaces = namespaces
  }
  if (v.function_registration_prefix !== undefined && v.function_registration_prefix !== null) {
    if (typeof v.function_registration_prefix !== 'string' || v.function_registration_prefix === '') {
      return 'function_registration_prefix must be a non-empty string'
    }
    const problem = idProblem(v.function_registration_prefix)
    if (problem !== undefined) return `function_registration_prefix ${problem}`
    result.function_registration_prefix = v.function_registration_prefix
  }
  if (v.context !== undefined && v.context !== null) result.context = v.context
  return result
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string')
}
