import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { parseStateTriggerConfig, stateEvent } from './triggers.ts'

describe('state trigger config (builtins.md §4.3)', () => {
  it('treats a missing or null config and null fields as no filter', () => {
    assert.deepEqual(parseStateTriggerConfig(undefined), {})
    assert.deepEqual(parseStateTriggerConfig(null), {})
    assert.deepEqual(parseStateTriggerConfig({ scope: null, key: null, condition_function_id: null }), {})
  })

  it('keeps an empty-string filter, which matches only the empty string', () => {
    assert.deepEqual(parseStateTriggerConfig({ scope: '', key: '' }), { scope: '', key: '' })
  })

  it('ignores unknown fields', () => {
    assert.deepEqual(parseStateTriggerConfig({ scope: 'users', extra: true }), { scope: 'users' })
  })
})

describe('state event payload (builtins.md §4.3)', () => {
  const base = { type: 'state', message_type: 'state', scope: 's', key: 'k' }

  it('is state:created with old_value null for a new key', () => {
    assert.deepEqual(stateEvent({ scope: 's', key: 'k', old_value: undefined, new_value: 1 }), {
      ...base,
      event_type: 'state:created',
      old_value: null,
      new_value: 1,
    })
  })

  it('is state:updated when the key existed, even holding null', () => {
    assert.deepEqual(stateEvent({ scope: 's', key: 'k', old_value: null, new_value: null }), {
      ...base,
      event_type: 'state:updated',
      old_value: null,
      new_value: null,
    })
  })

  it('is state:deleted with new_value null after a delete', () => {
    assert.deepEqual(stateEvent({ scope: 's', key: 'k', old_value: { a: 1 }, new_value: undefined }), {
      ...base,
      event_type: 'state:deleted',
      old_value: { a: 1 },
      new_value: null,
    })
  })
})
