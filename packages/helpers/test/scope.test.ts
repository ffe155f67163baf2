/**
 * The one store of svc-sdk's handler scope and OpenTelemetry's context (scope.ts): each half
 * changes on its own, so a handler that switches to another OpenTelemetry context keeps the
 * handler its calls are cancelled with (sdk.md §6), and entering a handler keeps the active
 * OpenTelemetry context.
 */
import assert from 'node:assert/strict'
import { EventEmitter } from 'node:events'
import { after, before, describe, it } from 'node:test'
import { context, createContextKey, ROOT_CONTEXT } from '@opentelemetry/api'
import { currentHandler, runInHandler, ScopeContextManager } from 'svc-helpers/observability/internal'
import { nextTurn } from '../../../test/support/wait.ts'

const KEY = createContextKey('scope test')
const handlerA = { name: 'a' }
const handlerB = { name: 'b' }

describe('ScopeContextManager', () => {
  before(() => {
    assert.equal(context.setGlobalContextManager(new ScopeContextManager().enable()), true)
  })
  after(() => {
    context.disable()
  })

  it('enters a handler and its context in one step, both kept across an await', async () => {
    const ctx = ROOT_CONTEXT.setValue(KEY, 'span')
    const seen = await runInHandler(handlerA, ctx, async () => {
      await nextTurn()
      return { handler: currentHandler(), value: context.active().getValue(KEY) }
    })
    assert.deepEqual(seen, { handler: handlerA, value: 'span' })
    assert.equal(currentHandler(), undefined)
    assert.equal(context.active(), ROOT_CONTEXT)
  })

  it('context.with changes only the OpenTelemetry half: the handler stays current', async () => {
    const ctx = ROOT_CONTEXT.setValue(KEY, 'span')
    await runInHandler(handlerA, ctx, async () => {
      const inner = await context.with(ROOT_CONTEXT, async () => {
        await nextTurn()
        return { handler: currentHandler(), value: context.active().getValue(KEY) }
      })
      assert.deepEqual(inner, { handler: handlerA, value: undefined })
      assert.equal(context.active().getValue(KEY), 'span', 'restored after with')
    })
  })

  it('entering a handler without a context keeps the active OpenTelemetry context', () => {
    const ctx = ROOT_CONTEXT.setValue(KEY, 'outer')
    context.with(ctx, () => {
      runInHandler(handlerB, undefined, () => {
        assert.equal(currentHandler(), handlerB)
        assert.equal(context.active().getValue(KEY), 'outer')
      })
    })
  })

  it('bound functions and event emitters get the bound context and keep the handler they run under', () => {
    const ctx = ROOT_CONTEXT.setValue(KEY, 'bound')
    const bound = context.bind(ctx, () => ({ handler: currentHandler(), value: context.active().getValue(KEY) }))
    assert.deepEqual(runInHandler(handlerA, undefined, bound), { handler: handlerA, value: 'bound' })
    const emitter = context.bind(ctx, new EventEmitter())
    let heard: unknown
    emitter.on('x', () => (heard = { handler: currentHandler(), value: context.active().getValue(KEY) }))
    runInHandler(handlerB, undefined, () => emitter.emit('x'))
    assert.deepEqual(heard, { handler: handlerB, value: 'bound' })
  })

  it('attach sets the context for the rest of the chain and dispose restores it, handler untouched', () => {
    runInHandler(handlerA, ROOT_CONTEXT.setValue(KEY, 'first'), () => {
      const manager = new ScopeContextManager()
      const token = manager.attach(ROOT_CONTEXT.setValue(KEY, 'attached'))
      assert.equal(context.active().getValue(KEY), 'attached')
      assert.equal(currentHandler(), handlerA)
      token.dispose()
      token.dispose()
      assert.equal(context.active().getValue(KEY), 'first')
      assert.equal(currentHandler(), handlerA)
    })
  })
})
