// A work queue: `drain` runs the queued jobs one after another and resolves with their results.
export function createQueue() {
  const jobs = []
  return {
    push(job) { jobs.push(job) },
    size() { return jobs.length },
    drain() {
      return new Promise((resolve, reject) => {
        const results = []
        const next = () => {
          if (jobs.length === 0) return resolve(results)
          const job = jobs.shift()
          job().then((value) => { results.push(value); next() }, reject)
        }
        next()
      })
    },
  }
}

export function checksum(values) {
  let sum = 0
  for (const v of values) sum = (sum * 31 + v) % 1_000_003
  return sum
}
