/** lib/policy/pager_history.ts: less's history file and its temporary sibling, in $HOME only, never a lesskey file. */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { pagerHistoryRules } from "../lib/policy/pager_history.ts";

const H = "/home/u";
const targets = (env: Record<string, string>) => pagerHistoryRules(H, (k) => env[k]).map((r) => r.target);

Deno.test("less's history: the default places and their temporary siblings", () => {
  assertEquals(targets({}), [
    `${H}/.local/state/lesshst`,
    `${H}/.local/state/lesshs*`,
    `${H}/.lesshst`,
    `${H}/.lesshs*`,
  ]);
  assertEquals(targets({ XDG_STATE_HOME: `${H}/st` }).slice(0, 2), [`${H}/st/lesshst`, `${H}/st/lesshs*`]);
});

Deno.test("less's history: nothing outside $HOME, no file that is not a history, none when turned off", () => {
  assertEquals(targets({ LESSHISTFILE: `${H}/.bashrc` }), []);
  assertEquals(targets({ LESSHISTFILE: "/etc/lesshst" }), []);
  assertEquals(targets({ LESSHISTFILE: "-" }), []);
  assertEquals(targets({ LESSHISTFILE: `${H}/../x/hist` }), []);
  assertEquals(targets({ LESSHISTFILE: `${H}/.cache/less_hist` }), [
    `${H}/.cache/less_hist`,
    `${H}/.cache/less_his*`,
  ]);
  assertEquals(targets({ XDG_STATE_HOME: "/etc", XDG_DATA_HOME: "/" }), targets({}));
  for (const t of targets({})) assertEquals(/lesskey|\/\.less$/.test(t), false);
});
