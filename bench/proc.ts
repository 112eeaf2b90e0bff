/**
 * Readings of another process from /proc (Linux), taken by the benchmark process so that the
 * process measured does no work for them: resident set (VmRSS), its peak (VmHWM) and CPU time.
 */
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';

let ticksPerSecond: number | undefined;

function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

/** VmRSS and VmHWM in bytes; null where /proc is not there. */
export async function residentBytes(pid: number): Promise<{ rss: number; hwm: number } | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
  } catch {
    return null;
  }
}

/** User + system CPU time of the process (all its threads, zlib's pool included), in ms. */
export async function cpuMs(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) start at field 3; utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / clockTicks()) * 1000;
}

/** Samples VmRSS every `everyMs` until stopped; returns the largest value seen. */
export function sampleRss(pid: number, everyMs = 100): { stop(): Promise<number> } {
  let max = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const r = await residentBytes(pid);
      if (r) max = Math.max(max, r.rss);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return max;
    },
  };
}
