/** A child process's output, read a line at a time (servers that print their ports, programs that report). */
export class Lines {
  #reader: ReadableStreamDefaultReader<string>;
  #buf = "";

  constructor(stream: ReadableStream<Uint8Array>) {
    this.#reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next line, without its newline; null when the output ends first (a last partial line is dropped). */
  async next(): Promise<string | null> {
    for (;;) {
      const nl = this.#buf.indexOf("\n");
      if (nl >= 0) {
        const line = this.#buf.slice(0, nl);
        this.#buf = this.#buf.slice(nl + 1);
        return line;
      }
      const { value, done } = await this.#reader.read();
      if (done) return null;
      this.#buf += value;
    }
  }

  /** The next line, which a server prints when it is ready (its ports): throws "`what` did not start" without. */
  async first(what: string): Promise<string> {
    const line = await this.next();
    if (line === null) throw new Error(`${what} did not start`);
    return line;
  }

  /** Stops reading (the child's output is cancelled). */
  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }

  /** Everything not read yet, to the end of the output. */
  async rest(): Promise<string> {
    for (;;) {
      const { value, done } = await this.#reader.read();
      if (done) break;
      this.#buf += value;
    }
    const all = this.#buf;
    this.#buf = "";
    return all;
  }
}
