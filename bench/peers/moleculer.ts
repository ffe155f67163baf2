/**
 * Broker options shared by the Moleculer callee and caller. Both ends must agree on the
 * transporter and the serializer, so they live in one place.
 */
import type { BrokerOptions } from 'moleculer'

/** Options for one bench broker named `nodeID`, connected to the nats-server at `natsUrl`. */
export function brokerOptions(nodeID: string, natsUrl: string): BrokerOptions {
  return {
    // Readable names in Moleculer's own log lines (the default is <hostname>-<pid>).
    nodeID,
    // The peer under test: Moleculer's NATS transporter through a real nats-server.
    transporter: { type: 'NATS', options: { url: natsUrl } },
    // Named although it is the default: the comparison is JSON against svc's JSON frames.
    serializer: 'JSON',
    // Named although off by default: either would add per-call work that svc's row does not do.
    metrics: false,
    tracing: false,
    // svc-sdk arms a 30 s deadline on every invocation; Moleculer's default is none (0).
    requestTimeout: 30000,
    // Startup and discovery lines only; nothing is logged per call at either level.
    logLevel: 'warn',
  }
}
