/**
 * `npm test`: runs the gate (fmt, lint, type check) and every suite (Deno unit and GPU tests,
 * Node tests, browser tests) and ends with one line `N passed, N failed, N skipped`. Each suite writes
 * JUnit XML, which is counted here; each gate step counts as one test.
 *
 * Suites:
 * - deno:    every `*_test.ts` under src/ and test/ (`deno test`), GPU tests included
 *            (lavapipe or llvmpipe when there is no GPU).
 * - node:    every `*.test.mjs` under test/node/ (`node --test`), against a bundle of src/.
 * - browser: every `*.test.mjs` under test/browser/ (`node --test`, Playwright + Chromium).
 */
import { runSuites } from "./support/suites.ts";

const filter = Deno.args.filter((a) => !a.startsWith("-"));
const code = await runSuites(filter);
Deno.exit(code);
