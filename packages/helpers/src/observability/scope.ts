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

/** What is current when an OpenTelemetry context is: the handler (opaque here; svc-sdk's `HandlerContext`) and that context. */
class Scope {
  readonly handler: unknown
  readonly context: Context

  constructor(handler: unknown, context: Context) {
    this.handler = handler
    this.context = context
  }
}

/**
 * A {@link Scope}, or the handler alone while no OpenTelemetry context was set (telemetry off: the
 * store then costs what a store of handlers alone did, no object per handler).
 */
const scopes = new AsyncLocalStorage<unknown>()

function handlerOf(value: unknown): unknown {
  return value instanceof Scope ? value.handler : value
}

function contextOf(value: unknown): Context | undefined {
  return value instanceof Scope ? value.context : undefined
}

/** The registered global context manager reads {@link scopes}: set by `initOtel`, cleared at its shutdown. */
let managerActive = false

/** Marks whether a {@link ScopeContextManager} is the global context manager (`initOtel`, `shutdownOtel`). */
export function setScopeManagerActive(active: boolean): void {
  managerActive = active
}

/** The handler whose work is running now (the value given to {@link runInHandler}), if any. */
export function currentHandler(): unknown {
  return handlerOf(scopes.getStore())
}

/**
 * Calls `fn(...args)` with `handler` current for everything it starts and returns what it returns.
 * With `ctx` (and only while this module's context manager is the global one, see
 * {@link canRunInContext}) `ctx` is also the active OpenTelemetry context, in the same `run`;
 * without it the active OpenTelemetry context stays as it is.
 */
export function runInHandler<A extends unknown[], T>(handler: unknown, ctx: Context | undefined, fn: (...args: A) => T, ...args: A): T {
  const context = ctx ?? contextOf(scopes.getStore())
  return scopes.run(context === undefined ? handler : new Scope(handler, context), fn, ...args)
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
    return contextOf(scopes.getStore()) ?? ROOT_CONTEXT
  }

  override with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    const cb = thisArg == null ? fn : (fn.bind(thisArg) as F)
    return scopes.run(new Scope(handlerOf(scopes.getStore()), ctx), cb, ...args)
  }

  override attach(ctx: Context): { dispose(): void } {
    const previous = scopes.getStore()
    scopes.enterWith(new Scope(handlerOf(previous), ctx))
    let disposed = false
    return {
      dispose: () => {
        if (disposed) return
        disposed = true
        scopes.enterWith(previous)
      },
    }
  }

  /** Leaves the store alone: it carries handler contexts too, which outlive telemetry. */
  override disable(): this {
    return this
  }
}
