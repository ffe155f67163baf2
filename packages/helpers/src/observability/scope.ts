/**
 * One `AsyncLocalStorage` for what runs now: the handler whose work it is (svc-sdk's handler
 * context, sdk.md §6: the calls a handler makes are cancelled with it) and the OpenTelemetry
 * context (sdk.md §12.3). Two stores meant two `run`s around every handler and two entries in every
 * async context frame Node copies; one store holding both halves costs one `run`.
 *
 * The halves stay independent: {@link ScopeContextManager} (the global context manager
 * `initOtel` registers) replaces only the OpenTelemetry half, so a handler that switches to an
 * unrelated context (`context.with(ROOT_CONTEXT, …)`) keeps its cancellation, and
 * {@link runInHandler} without a context keeps the OpenTelemetry half as it is.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { type Context, ROOT_CONTEXT } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'

/** What is current: the handler (opaque here; svc-sdk's `HandlerContext`) and the OpenTelemetry context. */
interface Scope {
  readonly handler: unknown
  readonly context: Context | undefined
}

const scopes = new AsyncLocalStorage<Scope>()

/** The registered global context manager reads {@link scopes}: set by `initOtel`, cleared at its shutdown. */
let managerActive = false

/** Marks whether a {@link ScopeContextManager} is the global context manager (`initOtel`, `shutdownOtel`). */
export function setScopeManagerActive(active: boolean): void {
  managerActive = active
}

/** The handler whose work is running now (the value given to {@link runInHandler}), if any. */
export function currentHandler(): unknown {
  return scopes.getStore()?.handler
}

/**
 * Calls `fn(...args)` with `handler` current for everything it starts and returns what it returns.
 * With `ctx` (and only while this module's context manager is the global one, see
 * {@link canRunInContext}) `ctx` is also the active OpenTelemetry context, in the same `run`;
 * without it the active OpenTelemetry context stays as it is.
 */
export function runInHandler<A extends unknown[], T>(handler: unknown, ctx: Context | undefined, fn: (...args: A) => T, ...args: A): T {
  return scopes.run({ handler, context: ctx ?? scopes.getStore()?.context }, fn, ...args)
}

/** True when {@link runInHandler}'s `ctx` is what OpenTelemetry's `context.active()` returns inside it. */
export function canRunInContext(): boolean {
  return managerActive
}

/**
 * OpenTelemetry's `AsyncLocalStorageContextManager` over {@link scopes}: `with` and `attach` change
 * the OpenTelemetry half only, the handler half is carried on. Its `bind` (functions and event
 * emitters) is the parent's, which goes through `with` and `active`.
 */
export class ScopeContextManager extends AsyncLocalStorageContextManager {
  override active(): Context {
    return scopes.getStore()?.context ?? ROOT_CONTEXT
  }

  override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    const cb = thisArg == null ? fn : (fn.bind(thisArg) as F)
    return scopes.run({ handler: scopes.getStore()?.handler, context: ctx }, cb, ...args)
  }

  override attach(ctx: Context): { dispose(): void } {
    const previous = scopes.getStore()
    scopes.enterWith({ handler: previous?.handler, context: ctx })
    let disposed = false
    return {
      dispose: () => {
        if (disposed) return
        disposed = true
        scopes.enterWith(previous as Scope)
      },
    }
  }

  /** Leaves the store alone: it carries handler contexts too, which outlive telemetry. */
  override disable(): this {
    return this
  }
}
