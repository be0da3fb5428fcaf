/**
 * Recipes for agent CLIs (`--agent NAME`): the places each keeps its state, as write rules. Found by running
 * each agent under `hallpass --log` (docs/agents.md says how to redo that for a new version or a new agent).
 */
import type { Rule } from "./types.ts";
import { UsageError } from "./types.ts";

export interface Recipe {
  name: string;
  description: string;
  /** Write scopes, `~` for $HOME. */
  write: string[];
}

export const RECIPES: Recipe[] = [
  {
    name: "claude",
    description: "Claude Code (@anthropic-ai/claude-code)",
    write: ["~/.claude/**", "~/.claude.json", "~/.claude.json.backup", "~/.claude.json.lock", "~/.cache/claude/**", "~/.config/claude/**"],
  },
  {
    name: "codex",
    description: "OpenAI Codex CLI (@openai/codex)",
    write: ["~/.codex/**"],
  },
  {
    name: "gemini",
    description: "Gemini CLI (@google/gemini-cli)",
    write: ["~/.gemini/**"],
  },
  {
    name: "copilot",
    description: "GitHub Copilot CLI (@github/copilot)",
    write: ["~/.copilot/**", "~/.cache/copilot/**"],
  },
];

export function agentRules(name: string, opts: { home: string; cwd: string }): Rule[] {
  const r = RECIPES.find((x) => x.name === name);
  if (!r) {
    throw new UsageError(`--agent ${name}: unknown agent (known: ${RECIPES.map((x) => x.name).join(", ")})`);
  }
  return r.write.map((w) => ({
    effect: "allow" as const,
    op: "write" as const,
    target: w.replace(/^~(?=\/)/, opts.home),
    source: { kind: "builtin" as const, what: `--agent ${name}` },
  }));
}
