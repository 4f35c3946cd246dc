/**
 * Runs one test suite's process for `npm test` (test/support/suites.ts): its output line by line
 * under its label (suites run side by side), a watchdog that stops a hung suite, its JUnit
 * report counted, and how it ended judged: a death by a signal after a clean report is forgiven
 * only for the one known teardown crash, matched by signal and by its exact last line on stderr.
 */
import { countJunit, type Counts } from "./junit.ts";

/** One process of a suite: what it runs and how long it may run. */
export interface SuiteRun {
  /** The label its lines and its count line carry, `deno (kernels)`, `browser`. */
  label: string;
  /** argv; `junit` is where the process must write its JUnit report. */
  argv: string[];
  junit: string;
  /** Minutes it may run before it is stopped and counted as one failure (a hung test). */
  minutes: number;
  env: Record<string, string>;
}

/** How one suite ended. */
export interface SuiteResult {
  label: string;
  counts: Counts;
  seconds: number;
  /** It ended without a clean account of its tests (stopped, or a crash not forgiven). */
  crashed: boolean;
}

/**
 * The deaths after a whole, clean report that are not counted: the Deno 2.9.6 + lavapipe
 * teardown crash (docs/status.md, Known issues), glibc's heap check aborting in libc's exit
 * handlers after the last test, with glibc's own message as the last line on stderr. Any other
 * signal, or this signal with any other last line (a real crash at exit), counts as a failure.
 */
export const KNOWN_EXIT_CRASHES: readonly { signal: string; lastLine: string }[] = [
  { signal: "SIGABRT", lastLine: "corrupted size vs. prev_size in fastbins" },
];

/** A process's exit as `Deno.Command` reports it. */
export interface ExitStatus {
  success: boolean;
  code: number;
  signal: string | null;
}

/** The signal a status names, also when only its shell-style code (128 + n) says it. */
function signalOf(status: ExitStatus): string | null {
  const byCode: Record<number, string> = { 134: "SIGABRT", 139: "SIGSEGV" };
  return status.signal ?? byCode[status.code] ?? null;
}

/** The last non-empty line of `text`, ANSI colours and surrounding blanks removed. */
export function lastLine(text: string): string {
  // deno-lint-ignore no-control-regex
  const lines = text.replace(/\x1b\[[0-9;]*m/g, "").split(/\r?\n/).map((l) => l.trim());
  return lines.filter((l) => l !== "").at(-1) ?? "";
}

/**
 * Whether a suite's process died by a known teardown crash (`KNOWN_EXIT_CRASHES`: its signal
 * and its exact last stderr line) after its JUnit report was written whole with tests passed
 * and none failed. Anything else that is not a success still counts as a failure.
 */
export function diedAfterReport(
  status: ExitStatus,
  counts: Counts,
  reported: boolean,
  stderrTail: string,
): boolean {
  if (status.success || !reported || counts.failed > 0 || counts.passed === 0) return false;
  const signal = signalOf(status);
  const line = lastLine(stderrTail);
  return KNOWN_EXIT_CRASHES.some((k) => k.signal === signal && k.lastLine === line);
}

/** Bytes of stderr kept to judge a crash by (its last line is what counts). */
const TAIL = 16_384;

/**
 * Seconds the output pipes may stay open after the suite's process ended (a process it started
 * and left running holds them) before they are no longer read.
 */
const DRAIN_S = 10;

/** Copy `stream` to `echo` line by line until it ends or `signal` aborts; `keep` sees all text. */
async function pump(
  stream: ReadableStream<Uint8Array>,
  signal: AbortSignal,
  echo: (line: string) => void,
  keep?: (text: string) => void,
): Promise<void> {
  let pending = "";
  try {
    for await (const text of stream.pipeThrough(new TextDecoderStream(), { signal })) {
      keep?.(text);
      const lines = (pending + text).split("\n");
      pending = lines.pop()!;
      for (const line of lines) echo(line);
    }
  } catch (e) {
    if (!signal.aborted) throw e;
  }
  if (pending !== "") echo(pending);
}

/** Run one suite's process to its end and count it; `echo` prints a line of its output. */
export async function runSuite(
  run: SuiteRun,
  echo: (line: string) => void = (line) => console.log(`[${run.label}] ${line}`),
): Promise<SuiteResult> {
  const started = performance.now();
  echo(`=== suite ${run.label}: ${run.argv.join(" ")}`);
  const [cmd, ...args] = run.argv as [string, ...string[]];
  const child = new Deno.Command(cmd, { args, env: run.env, stdout: "piped", stderr: "piped" })
    .spawn();
  let tail = "";
  const stop = new AbortController();
  const copies = Promise.all([
    pump(child.stdout, stop.signal, echo),
    pump(child.stderr, stop.signal, echo, (text) => tail = (tail + text).slice(-TAIL)),
  ]);
  // A suite past its time (a hung test) is stopped and counted as a failure, so that `npm test`
  // always ends with its count rather than holding CI until its own limit.
  let overtime = false;
  const watchdog = setTimeout(() => {
    overtime = true;
    echo(`suite ${run.label}: still running after ${run.minutes} min: stopping it`);
    child.kill("SIGKILL");
  }, run.minutes * 60_000);
  const status = await child.status;
  clearTimeout(watchdog);
  let drained: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([copies, new Promise((ok) => drained = setTimeout(ok, DRAIN_S * 1000))]);
  clearTimeout(drained);
  stop.abort();
  await copies;
  let counts: Counts;
  let reported = true;
  try {
    counts = countJunit(await Deno.readTextFile(run.junit));
  } catch {
    counts = { passed: 0, failed: 0, skipped: 0 };
    reported = false;
  }
  let crashed = false;
  if (overtime) {
    counts.failed += 1;
    crashed = true;
  } else if (diedAfterReport(status, counts, reported, tail)) {
    echo(
      `suite ${run.label}: every test reported (${counts.passed} passed, 0 failed), then the ` +
        `process died by ${signalOf(status)} with "${lastLine(tail)}" as it exited: the ` +
        `Deno 2.9.6 + lavapipe teardown crash (docs/status.md, Known issues); not counted as a test`,
    );
  } else if (!status.success && counts.failed === 0) {
    // The runner failed without reporting a failed test (a crash, a type error): count it.
    echo(
      `suite ${run.label} exited ${status.code}` +
        `${status.signal === null ? "" : ` (${status.signal})`} with no failed test reported`,
    );
    counts.failed += 1;
    crashed = true;
  }
  echo(
    `=== suite ${run.label}: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`,
  );
  return { label: run.label, counts, seconds: (performance.now() - started) / 1000, crashed };
}
