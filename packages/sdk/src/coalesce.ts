/**
 * Write coalescing for the invocation path: frames sent during one turn of the event loop leave
 * in one TCP write instead of one `writev` syscall each (the largest cost under load in profiles).
 * Relies on `ws` keeping its TCP socket in `_socket`; without it, frames are sent one by one.
 */
import type WebSocket from 'ws'

interface Corkable {
  cork(): void
  uncork(): void
  svcCorked?: boolean
  svcBatch?: number
}

/** Frames coalesced into one TCP write at most, so the engine can start on the first while later ones are built. */
const MAX_BATCH = 16

function uncork(tcp: Corkable): void {
  tcp.svcCorked = false
  tcp.uncork()
}

/** Sends one text frame on `socket`, batched with the other frames of this tick. */
export function sendCoalesced(socket: WebSocket, text: string): void {
  const tcp = (socket as unknown as { _socket?: Corkable })._socket
  if (tcp !== undefined && typeof tcp.cork === 'function') {
    if (tcp.svcCorked !== true) {
      tcp.svcCorked = true
      tcp.svcBatch = 0
      tcp.cork()
      process.nextTick(uncork, tcp)
    } else if (++tcp.svcBatch! >= MAX_BATCH) {
      tcp.svcBatch = 0
      socket.send(text)
      tcp.uncork()
      tcp.cork()
      return
    }
  }
  socket.send(text)
}
