import assert from 'node:assert/strict'
import { it } from 'node:test'
import { parseStreamSettings } from './settings.ts'
import { parseJoinLeaveTriggerConfig, parseStreamTriggerConfig } from './triggers.ts'
import { authInput, parseClientMessage } from './clients.ts'
import type { IncomingMessage } from 'node:http'

it('settings: defaults of §6.1, null takes the default, messages start with the key', () => {
  assert.deepEqual(parseStreamSettings(undefined), {
    port: 3112,
    host: '127.0.0.1',
    auth_function: null,
    auth_timeout_ms: 10000,
    client_buffer_messages: 1024,
    client_buffer_bytes: 16 * 1024 * 1024,
    max_item_bytes: null,
    adapter: { name: 'builtin', config: {} },
  })
  assert.equal(parseStreamSettings({ port: null, client_buffer_messages: 5 }).client_buffer_messages, 5)
  assert.throws(() => parseStreamSettings({ client_buffer_messages: 0 }), /^SvcError: client_buffer_messages must be an integer >= 1, got 0$/)
  assert.throws(() => parseStreamSettings({ client_buffer_bytes: 0.5 }), /^SvcError: client_buffer_bytes must be an integer >= 1, got 0.5$/)
  assert.throws(() => parseStreamSettings({ auth_function: '' }), /auth_function must be a non-empty string or null/)
  assert.throws(() => parseStreamSettings({ max_item_bytes: 1.5 }), /max_item_bytes must be an integer >= 1 or null/)
  assert.throws(() => parseStreamSettings({ host: 3 }), /host must be a non-empty string/)
  assert.throws(() => parseStreamSettings([]), /svc-stream settings must be an object/)
  assert.deepEqual(parseStreamSettings({ adapter: { name: 'redis', config: { redis_url: 'redis://cache:6380' } } }).adapter, {
    name: 'redis',
    config: { url: 'redis://cache:6380', key_prefix: 'svc:' },
  })
  assert.throws(() => parseStreamSettings({ adapter: { name: 'redis', config: { key_prefix: 7 } } }), {
    code: 'INVALID_ARGUMENTS',
    message: /adapter\.config\.key_prefix must be a string/,
  })
})

it('trigger configs: stream_name required for stream, filters optional, INVALID_TRIGGER_CONFIG naming the field', () => {
  assert.throws(() => parseStreamTriggerConfig({}), { code: 'INVALID_TRIGGER_CONFIG', message: 'stream_name is required for stream triggers' })
  assert.throws(() => parseStreamTriggerConfig({ stream_name: 's', group_id: 1 }), { message: 'group_id must be a string for stream triggers' })
  assert.deepEqual(parseStreamTriggerConfig({ stream_name: 's', group_id: '', item_id: 'i' }), { stream_name: 's', item_id: 'i' })
  assert.deepEqual(parseJoinLeaveTriggerConfig(undefined, 'stream:join'), {})
  assert.throws(() => parseJoinLeaveTriggerConfig({ condition_function_id: '' }, 'stream:leave'), {
    code: 'INVALID_TRIGGER_CONFIG',
    message: 'condition_function_id must be a non-empty string for stream:leave triggers',
  })
})

it('client messages: join and leave parsed, anything else explained', () => {
  assert.deepEqual(parseClientMessage({ type: 'join', data: { subscriptionId: 's', streamName: 'a', groupId: 'g' } }), {
    type: 'join', subscriptionId: 's', streamName: 'a', groupId: 'g', id: null,
  })
  assert.deepEqual(parseClientMessage({ type: 'leave', data: { subscriptionId: 's' } }), { type: 'leave', subscriptionId: 's' })
  assert.equal(parseClientMessage([]), 'message must be an object')
  assert.equal(parseClientMessage({ type: 'join', data: { subscriptionId: 's', streamName: 'a', groupId: 'g', id: 4 } }), 'data.id must be a non-empty string')
})

it('auth input: query values are arrays, path without query', () => {
  const req = { url: '/p?x=1&x=2&y', headers: { host: 'h' }, socket: { remoteAddress: '::1', remotePort: 5 } } as unknown as IncomingMessage
  assert.deepEqual(authInput(req), { addr: '[::1]:5', headers: { host: 'h' }, path: '/p', query_params: { x: ['1', '2'], y: [''] } })
})
