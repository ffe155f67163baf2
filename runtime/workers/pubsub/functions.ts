/**
 * The functions of the pub/sub worker (builtins.md §8): `publish`, which hands a message to the
 * adapter in use and answers at once; delivery to the `subscribe` triggers happens later
 * (./triggers.ts), so a publisher never waits for, nor hears about, a subscriber.
 */
import { Errors } from 'svc-protocol/errors'
import type { PubSubAdapter, PubSubOrigin } from '../../adapters/pubsub/types.ts'
import type { InvocationContext, LocalWorker } from '../../engine/types.ts'
import type { AdapterSlots } from '../shared/adapter-slots.ts'
import { NO_RESULT } from '../shared/formats.ts'
import { topicProblem } from './triggers.ts'

/**
 * Registers `publish` on `worker`; its messages go to the current adapter of `adapters`.
 * @example registerPubSubFunctions(context.worker, adapters, 'svc-pubsub')
 */
export function registerPubSubFunctions(worker: LocalWorker, adapters: AdapterSlots<PubSubAdapter>, workerName: string): void {
  worker.registerFunction('publish', (data, invocation) => publish(adapters, workerName, data, invocation), {
    description: 'Publish data to every subscribe trigger of the topic (best effort, no result)',
    request_format: { type: 'object', required: ['topic'], properties: { topic: { type: 'string', minLength: 1 }, data: {} } },
    response_format: NO_RESULT,
  })
}

/**
 * `publish {topic, data}` (§8): resolves with no result once the message is handed over.
 * @throws SvcError `topic_not_set` for a missing, null or empty topic; `INVALID_ARGUMENTS` for a
 *   payload that is not an object or a topic that is not a string or not well-formed text
 *   ({@link topicProblem}); `ADAPTER_UNAVAILABLE`.
 */
async function publish(adapters: AdapterSlots<PubSubAdapter>, workerName: string, data: unknown, invocation: InvocationContext): Promise<undefined> {
  if (data !== undefined && data !== null && (typeof data !== 'object' || Array.isArray(data))) {
    throw Errors.invalidArguments('payload must be an object')
  }
  const payload = (data ?? {}) as Record<string, unknown>
  const topic = payload.topic
  if (topic === undefined || topic === null || topic === '') throw Errors.topicNotSet()
  if (typeof topic !== 'string') throw Errors.invalidArguments('topic must be a non-empty string')
  const problem = topicProblem(topic)
  if (problem !== undefined) throw Errors.invalidArguments(`topic ${problem}`)
  if (adapters.current === null) throw Errors.adapterUnavailable(`${workerName} is stopped`)
  const origin: PubSubOrigin = {}
  if (invocation.traceparent !== undefined) origin.traceparent = invocation.traceparent
  if (invocation.baggage !== undefined) origin.baggage = invocation.baggage
  await adapters.run('publish', (adapter) => adapter.publish(topic, payload.data, origin))
  return undefined
}
