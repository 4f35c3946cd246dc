/**
 * `npm test [-- NAME...]`: runs the gate (fmt, lint, type check) and every suite (Deno unit and
 * GPU tests, Node tests, browser tests), or only those named, and ends with each suite's time,
 * then one line `N passed, N failed, N skipped` (the last). Each suite writes JUnit XML, which is
 * counted here; each gate step counts as one test. After the gate the suites run in three lanes
 * side by side (`LANE` in test/support/suites.ts).
 *
 * Suites:
 * - deno:    every `*_test.ts` under src/ and test/ (`deno test`), GPU tests included
 *            (lavapipe or llvmpipe when there is no GPU), in four processes (kernels, models,
 *            engines, the rest: see `DENO_PARTS`).
 * - node:    every `*.test.mjs` under test/node/ (`node --test`), against a bundle of src/.
 * - browser: every `*.test.mjs` under test/browser/ (`node --test`, Playwright + Chromium).
 * - browser_big: every `*.test.mjs` under test/browser_big/: a 2 GB random-weight model
 *            (generated once into .cache/big-model/) through `openModel` in Chromium.
 */
import { runCli } from "../src/adapters/deno/flags.ts";
import { runSuites, SUITE_NAMES } from "./support/suites.ts";

const { args, fail } = runCli({
  name: "test",
  command: "deno task test",
  about:
    "The gate (fmt, lint, type check, JSR dry run) and every test suite, or only those named; " +
    "the last line is N passed, N failed.",
  flags: {},
  args: {
    usage: "[NAME...]",
    min: 0,
    max: Infinity,
    help: `only these: ${SUITE_NAMES.join(", ")}`,
  },
});
const unknown = args.find((a) => !(SUITE_NAMES as readonly string[]).includes(a));
if (unknown !== undefined) {
  fail(`no suite ${JSON.stringify(unknown)} (${SUITE_NAMES.join(", ")})`);
}
const code = await runSuites(args);
Deno.exit(code);
