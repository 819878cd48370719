import { defineConfig } from 'vitest/config'

// a test may wait as long as the caller lets it: the runner's own timeout stops a hang.
// Three workers on any machine (vitest's default is one fewer than the cores: one on 2 cores, where a hanging file
// holds the only worker and the files queued after it never run). The results cache (which orders the next run's
// files) stays in this copy of the project, not in node_modules, which copies share.
export default defineConfig({ cacheDir: '.vitest-cache', test: { testTimeout: 600_000, maxWorkers: 3, minWorkers: 3 } })
