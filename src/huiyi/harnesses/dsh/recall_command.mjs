// huiyi's `/recall WORDS` for DSH: a plugin row `huiyi install dsh` adds to cordis.patch.yml.
//
// A person types `/recall 部署脚本` in a DSH client; DSH's command registry runs this handler
// (never the model) and the client shows what it returns. The handler runs `huiyi recall`
// with the words as one argument (execFile: no shell sees them), in the session's workspace,
// and returns exactly what the agent's recall_history tool would. No words is a usage error.
// The row's config is {command, args, env}: how this machine starts huiyi.

import { execFile } from 'node:child_process'

export const name = 'huiyi-recall-command'
export const inject = ['commands']

const USAGE = 'Usage: /recall WORDS (search this workspace\'s history with huiyi, e.g. /recall 部署脚本)'
const TIMEOUT_MS = 60_000
const MAX_OUTPUT = 4 * 1024 * 1024

function recall(config, invocation) {
  const words = invocation.rawInput.trim()
  if (words.length === 0) return Promise.resolve({ kind: 'error', text: USAGE })
  const header = invocation.agent?.session?.header ?? {}
  const argv = [...(config.args ?? []), 'recall']
  if (typeof header.cwd === 'string') argv.push('--workspace', header.cwd)
  if (typeof header.id === 'string') argv.push('--session', header.id)
  argv.push('--', words)
  const options = {
    cwd: typeof header.cwd === 'string' ? header.cwd : undefined,
    env: { ...process.env, ...(config.env ?? {}) },
    timeout: TIMEOUT_MS,
    maxBuffer: MAX_OUTPUT,
    signal: invocation.signal,
    windowsHide: true,
  }
  return new Promise((resolve) => {
    execFile(config.command, argv, options, (error, stdout, stderr) => {
      if (error) {
        const said = String(stderr || stdout || error.message).trim()
        resolve({ kind: 'error', text: `huiyi recall failed: ${said}` })
        return
      }
      resolve({ kind: 'success', text: String(stdout).trimEnd() })
    })
  })
}

export function apply(ctx, config) {
  ctx.effect(function* () {
    yield ctx.commands.register({
      name: 'recall',
      description: 'Search this workspace\'s history with huiyi',
      input: { hint: 'words to look for' },
      recordInput: true,
      handler: (invocation) => recall(config, invocation),
    })
  }, 'huiyi recall command')
}
