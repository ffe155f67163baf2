/**
 * {{project_name}}: one worker showing the three ways work starts in svc.
 *
 *   curl -s 'localhost:3111/hello?name=Ada'   # HTTP: {"message":"Hello, Ada!","count":1}
 *   svc trigger hello::greet name=Ada          # the same function, called by id
 *   svc trigger stream::list stream_name=activity group_id=hello
 *
 * - `hello::greet` answers GET /hello, counts greetings in the state worker (scope `counters`)
 *   and records the last one in the stream `activity`, which browsers can watch live on
 *   ws://localhost:3112 by sending {"type":"join","data":{"subscriptionId":"s1","streamName":"activity","groupId":"hello"}}.
 * - `hello::tick` runs on a cron schedule (every minute, at second 0) and records the time.
 * - `hello::on-activity` is called for every change of the `activity` stream and logs it.
 */
import { registerWorker } from 'svc-sdk'
import type { HttpRequest, HttpResponse } from 'svc-sdk'

const svc = registerWorker()

interface Greeting {
  message: string
  count: number
}

svc.registerFunction(
  'hello::greet',
  async (input: HttpRequest | { name?: string }): Promise<HttpResponse<Greeting> | Greeting> => {
    const overHttp = 'query_params' in input
    // A query parameter is a string, or an array when the key repeats (?name=a&name=b).
    const given = overHttp ? input.query_params.name : (input as { name?: string }).name
    const name = (Array.isArray(given) ? given[0] : given) ?? 'world'
    // One atomic update: concurrent greetings never lose a count.
    const counted = await svc.trigger<unknown, { new_value: { greetings: number } }>({
      function_id: 'state::update',
      payload: { scope: 'counters', key: 'hello', ops: [{ type: 'increment', path: 'greetings', by: 1 }] },
    })
    const count = counted.new_value.greetings
    await svc.trigger({
      function_id: 'stream::set',
      payload: { stream_name: 'activity', group_id: 'hello', item_id: 'last-greeting', data: { name, count, at: new Date().toISOString() } },
    })
    const greeting = { message: `Hello, ${name}!`, count }
    return overHttp ? { status_code: 200, body: greeting } : greeting
  },
  { description: 'Greets ?name=, counts greetings in state and records the last one in the activity stream' },
)
svc.registerTrigger({ type: 'http', function_id: 'hello::greet', config: { api_path: '/hello', http_method: 'GET' } })

svc.registerFunction(
  'hello::tick',
  async (run: { scheduled_time: string }) => {
    await svc.trigger({
      function_id: 'stream::set',
      payload: { stream_name: 'activity', group_id: 'cron', item_id: 'last-tick', data: { scheduled_time: run.scheduled_time } },
    })
  },
  { description: 'Runs on the cron schedule; records the scheduled time in the activity stream' },
)
// Six fields, seconds first: second minute hour day-of-month month day-of-week.
svc.registerTrigger({ type: 'cron', function_id: 'hello::tick', config: { expression: '0 * * * * *' } })

svc.registerFunction(
  'hello::on-activity',
  (event: { groupId: string; id: string | null; event: { type: string; data?: unknown } }) => {
    console.log(`activity ${event.groupId}/${event.id}: ${event.event.type} ${JSON.stringify(event.event.data)}`)
  },
  { description: 'Logs every change of the activity stream' },
)
svc.registerTrigger({ type: 'stream', function_id: 'hello::on-activity', config: { stream_name: 'activity' } })

svc.addConnectionStateListener((state) => console.log(`engine connection: ${state}`))

// svc stops workers with SIGTERM: close the connection cleanly, then exit.
const stop = async (): Promise<void> => {
  await svc.shutdown()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
