/**
 * The guest agent of cli.md §5.7: PID 1 of every microVM, a script for the static busybox of the
 * initramfs. It loads the virtio modules, mounts the runtime root (virtiofs `runtime`, read-only)
 * under a tmpfs overlay with the worker directory (virtiofs `workspace`) at `/workspace`, brings up
 * the network, then serves JSON lines on the virtio-serial port `svc.ctl`.
 *
 * Commands (host → guest), one JSON object a line:
 * - `{"op":"start","gen":N,"sh":"<base64>"}`: runs the shell program (see {@link startProgram}) as
 *   the leader of a new session and process group, stdout on port `svc.out`, stderr on `svc.err`.
 * - `{"op":"restart","gen":N,"sh":"<base64>"}`: SIGTERM to the current group, up to 5 s, SIGKILL,
 *   then as `start`.
 * - `{"op":"stop"}`: the same without the new start. `{"op":"poweroff"}`: stop, sync, power off.
 *
 * Events (guest → host): `{"event":"ready"}` once the mounts and the network are up;
 * `{"event":"started","gen":N,"pid":P}`; `{"event":"exit","gen":N,"code":C}` (C > 128: killed by
 * signal C − 128); `{"event":"error","message":"…"}` when a mount or a module fails.
 *
 * The program travels base64-encoded so that busybox `sed` extracts it exactly; the environment
 * travels in it, never on the kernel command line. The agent reaps every child: busybox `sh`
 * collects any exited child (orphans included) whenever it waits, and it waits after every command.
 */

/** Kernel modules the agent loads, in dependency order (Debian cloud kernel, all `=m`). */
export const GUEST_MODULES = [
  'virtio_ring',
  'virtio',
  'virtio_mmio',
  // q35, the fallback machine: virtio over PCI.
  'virtio_pci_legacy_dev',
  'virtio_pci_modern_dev',
  'virtio_pci',
  'virtio_console',
  'failover',
  'net_failover',
  'virtio_net',
  'fuse',
  'virtiofs',
  'overlay',
] as const

/** The `/init` of the initramfs. */
export const AGENT_SCRIPT = String.raw`#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /run /lower /upper /newroot
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
say() { echo "svc-agent: $*" > /dev/console; }
mmio=""
for word in $(cat /proc/cmdline); do
  case "$word" in virtio_mmio.device=*) mmio="$mmio device=$(echo "$word" | sed s/^virtio_mmio.device=//)" ;; esac
done
for m in ${GUEST_MODULES.join(' ')}; do
  if [ "$m" = virtio_mmio ]; then insmod /lib/modules/$m.ko $mmio; else insmod /lib/modules/$m.ko; fi || say "insmod $m failed"
done
port() {
  i=0
  while [ $i -lt 200 ]; do
    for p in /sys/class/virtio-ports/*; do
      [ -f "$p/name" ] && [ "$(cat $p/name)" = "$1" ] && { echo /dev/$(basename $p); return 0; }
    done
    sleep 0.05; i=$((i+1))
  done
  return 1
}
ctl=$(port svc.ctl) || { say "no svc.ctl port"; poweroff -f; }
exec 3<>"$ctl"
exec 4>"$(port svc.out)"
exec 5>"$(port svc.err)"
say "ports $ctl"
fail() { echo "{\"event\":\"error\",\"message\":\"$1\"}" >&3; say "$1"; }
mount -t virtiofs runtime /lower -o ro || fail "cannot mount the runtime root"
mount -t tmpfs -o mode=0755 upper /upper
mkdir -p /upper/u /upper/w
mount -t overlay overlay -o lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w /newroot || fail "cannot mount the overlay"
mkdir -p /newroot/workspace /newroot/proc /newroot/dev /newroot/tmp /newroot/sys
mount -t virtiofs workspace /newroot/workspace || fail "cannot mount /workspace"
say "mounted"
mount -t proc proc /newroot/proc
mount -t devtmpfs dev /newroot/dev
mount -t tmpfs -o mode=1777 tmp /newroot/tmp
ip link set lo up
ip link set eth0 up 2>/dev/null && ip addr add 10.0.2.15/24 dev eth0 && ip route add default via 10.0.2.2
echo '{"event":"ready"}' >&3
current=""
start() {
  printf '%s' "$2" | base64 -d > /newroot/tmp/.svc-start.sh
  (
    setsid chroot /newroot /bin/sh /tmp/.svc-start.sh <&- >&4 2>&5 3>&- 4>&- 5>&- &
    pid=$!
    echo $pid > /run/pid.$1
    echo "{\"event\":\"started\",\"gen\":$1,\"pid\":$pid}" >&3
    wait $pid
    code=$?
    rm -f /run/pid.$1
    echo "{\"event\":\"exit\",\"gen\":$1,\"code\":$code}" >&3
  ) &
  i=0
  while [ ! -f /run/pid.$1 ] && [ $i -lt 100 ]; do sleep 0.02; i=$((i+1)); done
  current=$1
}
stop() {
  [ -n "$current" ] || return 0
  pid=$(cat /run/pid.$current 2>/dev/null)
  if [ -n "$pid" ]; then
    kill -TERM -$pid 2>/dev/null
    i=0
    while [ -f /run/pid.$current ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
    kill -KILL -$pid 2>/dev/null
    i=0
    while [ -f /run/pid.$current ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
  fi
  current=""
}
while read -r line <&3; do
  op=$(echo "$line" | sed -n 's/.*"op":"\([a-z]*\)".*/\1/p')
  gen=$(echo "$line" | sed -n 's/.*"gen":\([0-9]*\).*/\1/p')
  sh=$(echo "$line" | sed -n 's/.*"sh":"\([A-Za-z0-9+\/=]*\)".*/\1/p')
  case "$op" in
    start) stop; start "$gen" "$sh" ;;
    restart) stop; start "$gen" "$sh" ;;
    stop) stop ;;
    poweroff) stop; sync; echo '{"event":"poweroff"}' >&3; poweroff -f ;;
    *) fail "unknown command" ;;
  esac
done
poweroff -f
`

/** A start command for the agent: what to run, where, with which environment (cli.md §5.7). */
export interface GuestCommand {
  /** Run by the guest's `/bin/sh -c` (the manifest's start command, as on the host). */
  command: string
  /** Current directory inside the guest; `/workspace` is the worker directory. */
  cwd: string
  env: Record<string, string>
  /**
   * The worker directory's host path: the guest makes it a symlink to `/workspace` (unless the
   * path exists in the root), so absolute paths a host install wrote (a venv's script shebangs,
   * an editable install's `.pth`) resolve in the guest too.
   */
  hostPath?: string
}

/** PATH inside the guest: the workspace's package binaries, then the runtime root's. */
export const GUEST_PATH = '/workspace/node_modules/.bin:/usr/local/bin:/usr/bin:/bin'

/** A POSIX shell word that stands for `value` exactly. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}

/** Names a POSIX shell can export. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * The shell program the agent runs for `start`/`restart`: a clean environment holding exactly
 * `env` (names that are not shell names are left out; NUL is cut), `cd` to `cwd`, then `exec sh -c`
 * of the command, so the group leader the agent signals is the worker's own shell.
 */
export function startProgram(command: GuestCommand): string {
  const lines = ['for v in $(env | sed -n "s/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p"); do unset "$v" 2>/dev/null; done']
  for (const [name, value] of Object.entries(command.env)) {
    if (!ENV_NAME.test(name)) continue
    lines.push(`export ${name}=${shellQuote(value.replaceAll('\0', ''))}`)
  }
  // Host paths mean nothing in the guest: its own PATH and HOME win.
  lines.push(`export PATH=${shellQuote(GUEST_PATH)} HOME=/tmp`)
  const alias = command.hostPath?.replaceAll('\0', '')
  if (alias !== undefined && /^\/[^\n]*[^/\n]$/.test(alias) && alias !== '/workspace') {
    const quoted = shellQuote(alias)
    lines.push(`[ -e ${quoted} ] || [ -L ${quoted} ] || { mkdir -p "$(dirname ${quoted})" && ln -s /workspace ${quoted}; } 2>/dev/null`)
  }
  lines.push(`cd ${shellQuote(command.cwd.replaceAll('\0', ''))} || exit 126`)
  lines.push(`exec /bin/sh -c ${shellQuote(command.command.replaceAll('\0', ''))}`)
  return `${lines.join('\n')}\n`
}

/** The JSON line of a `start` or `restart` command. */
export function startLine(op: 'start' | 'restart', gen: number, command: GuestCommand): string {
  return `${JSON.stringify({ op, gen, sh: Buffer.from(startProgram(command)).toString('base64') })}\n`
}
