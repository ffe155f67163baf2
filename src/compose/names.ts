/**
 * Generated namespaces for `svc compose` without `-n` (cli.md §4.7): two words, `brave-otter`.
 */
import { randomInt } from 'node:crypto'

const ADJECTIVES = [
  'amber', 'bold', 'brave', 'bright', 'calm', 'clever', 'cosmic', 'crisp', 'daring', 'eager',
  'fancy', 'gentle', 'golden', 'happy', 'hidden', 'jolly', 'keen', 'kind', 'lively', 'lucky',
  'mellow', 'merry', 'misty', 'nimble', 'noble', 'plucky', 'polite', 'proud', 'quick', 'quiet',
  'rapid', 'rosy', 'rustic', 'shiny', 'silent', 'silver', 'snowy', 'sunny', 'swift', 'tidy',
  'vivid', 'warm', 'wild', 'wise', 'witty', 'zesty',
] as const

const ANIMALS = [
  'badger', 'beaver', 'bison', 'condor', 'coyote', 'crane', 'dingo', 'dolphin', 'eagle', 'falcon',
  'ferret', 'finch', 'fox', 'gecko', 'heron', 'ibis', 'jaguar', 'koala', 'lemur', 'lynx',
  'marten', 'mole', 'moose', 'newt', 'ocelot', 'orca', 'otter', 'owl', 'panda', 'puffin',
  'quail', 'raven', 'robin', 'salmon', 'seal', 'sparrow', 'stoat', 'swan', 'tapir', 'tiger',
  'toucan', 'walrus', 'weasel', 'wombat', 'wren', 'yak',
] as const

/**
 * A random `<adjective>-<animal>` namespace; about 2000 combinations, enough to keep the daemons
 * one developer starts apart.
 *
 * @example generateNamespace() // 'brave-otter'
 */
export function generateNamespace(random: (max: number) => number = randomInt): string {
  return `${ADJECTIVES[random(ADJECTIVES.length)]}-${ANIMALS[random(ANIMALS.length)]}`
}
