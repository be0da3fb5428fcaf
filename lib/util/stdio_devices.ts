/** The character devices fds 0-2 are open on (their /proc/self/fd links) that `keep` accepts, each once. */
export function stdioCharDevices(keep: (path: string) => boolean): string[] {
  const out = new Set<string>();
  for (const fd of [0, 1, 2]) {
    try {
      const t = Deno.readLinkSync(`/proc/self/fd/${fd}`);
      if (keep(t) && Deno.statSync(t).isCharDevice) out.add(t);
    } catch {
      // closed, or not a file
    }
  }
  return [...out];
}
