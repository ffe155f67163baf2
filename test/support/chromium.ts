/**
 * Debian's Chromium for browser tests, through playwright-core. A missing browser fails the test
 * instead of skipping it: the browser flows must run in CI (`apt-get install -y chromium`, or set
 * SVC_BROWSER to another Chromium executable).
 */
import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { chromium, type Browser } from 'playwright-core'

/** The Chromium executable the tests use. */
export const CHROMIUM_PATH = process.env.SVC_BROWSER ?? '/usr/bin/chromium'

/** Headless, no sandbox (containers), nothing that talks to Google or needs a GPU. */
export const CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync']

/** Launches Chromium; the caller closes it. */
export async function launchChromium(): Promise<Browser> {
  assert.ok(existsSync(CHROMIUM_PATH), `no browser at ${CHROMIUM_PATH}: install Chromium (apt-get install -y chromium) or set SVC_BROWSER to a Chromium executable`)
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_FLAGS })
}
