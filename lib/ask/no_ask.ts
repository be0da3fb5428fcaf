/** The no-ask backend: nothing waits, whatever would ask is denied (docs/ci.md). */
import type { Answer } from "../types.ts";
import type { AskBackend } from "./backend.ts";

export class NoAsk implements AskBackend {
  readonly name = "no-ask";
  ask(): Promise<Answer> {
    return Promise.resolve({ kind: "deny", by: "no-ask" });
  }
  close(): void {}
}
